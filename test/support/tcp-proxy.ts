/**
 * A TCP proxy a test controls, for putting a database "away" without touching the database server:
 * `down()` closes every connection and refuses new ones (what a stopped server looks like),
 * `stall()` keeps connections open but forwards nothing either way and accepts new ones without
 * forwarding (a network that drops packets), `restore()` forwards again. The port stays the same.
 */
import { Effect } from "effect"
import * as net from "node:net"

export interface TcpProxy {
  readonly port: number
  readonly down: () => Promise<void>
  readonly stall: () => void
  readonly restore: () => Promise<void>
  /** Connections accepted so far (a way to see a pool reconnect). */
  readonly accepted: () => number
}

type Mode = "forward" | "stall" | "down"

export const startTcpProxy = (target: { readonly host: string; readonly port: number }): Promise<TcpProxy> => {
  let mode: Mode = "forward"
  let accepted = 0
  const pairs = new Set<{ readonly client: net.Socket; readonly upstream: net.Socket | undefined }>()

  const destroyAll = () => {
    for (const pair of pairs) {
      pair.client.destroy()
      pair.upstream?.destroy()
    }
    pairs.clear()
  }

  const onConnection = (client: net.Socket) => {
    accepted += 1
    client.on("error", () => {})
    if (mode === "stall") {
      // Accepted, never answered: the client's connect timeout is what ends it.
      const pair = { client, upstream: undefined }
      pairs.add(pair)
      client.on("close", () => pairs.delete(pair))
      client.pause()
      return
    }
    const upstream = net.connect(target.port, target.host)
    upstream.on("error", () => client.destroy())
    const pair = { client, upstream }
    pairs.add(pair)
    const forward = (from: net.Socket, to: net.Socket) =>
      from.on("data", (chunk) => {
        // While stalled, data is dropped as a lossy network would (the sender never hears back).
        if (mode === "forward") to.write(chunk)
      })
    forward(client, upstream)
    forward(upstream, client)
    const close = () => {
      client.destroy()
      upstream.destroy()
      pairs.delete(pair)
    }
    client.on("close", close)
    upstream.on("close", close)
  }

  let server = net.createServer(onConnection)
  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port
      const listen = () =>
        new Promise<void>((res, rej) => {
          server = net.createServer(onConnection)
          server.once("error", rej)
          server.listen(port, "127.0.0.1", () => res())
        })
      resolve({
        port,
        accepted: () => accepted,
        down: () =>
          new Promise<void>((res) => {
            mode = "down"
            destroyAll()
            server.close(() => res())
          }),
        stall: () => {
          mode = "stall"
        },
        restore: async () => {
          const wasDown = mode === "down"
          // Connections held while stalled are dropped: their clients time out and reconnect.
          if (mode === "stall") destroyAll()
          mode = "forward"
          if (wasDown) await listen()
        }
      })
    })
  })
}

/** A proxy for the scope's duration, closed (with every connection) at its end. */
export const scopedTcpProxy = (target: { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(Effect.promise(() => startTcpProxy(target)), (proxy) => Effect.promise(() => proxy.down()))
