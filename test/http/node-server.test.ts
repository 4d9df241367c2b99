import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import type { IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import type { Duplex } from "node:stream"
import WebSocket from "ws"
import { makeNodeServer } from "../../src/http/node-server.ts"
import { loadSettings } from "../../src/settings/settings.ts"

describe("the node server", () => {
  it.live("answers a request that came before the handler was attached, once it is (the port opens first)", () =>
    Effect.gen(function* () {
      const settings = yield* loadSettings({ "server.api.port": 0 })
      const server = makeNodeServer(settings, { logsRequests: false })
      yield* Effect.addFinalizer(() => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve()))))
      yield* Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve())))
      const port = (server.address() as AddressInfo).port
      const health = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/v2/api/health`))
      expect(health.status).toBe(200)
      // A request right after the first liveness answer, before the handler is attached.
      const early = fetch(`http://127.0.0.1:${port}/v2/api/ready`).then(async (res) => [res.status, await res.text()] as const)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 200)))
      server.on("request", (_request, response) => response.end("handled"))
      const answer = yield* Effect.promise(() => early).pipe(Effect.timeout("5 seconds"))
      expect(answer).toEqual([200, "handled"])
    }).pipe(Effect.scoped), 20_000)

  it.live("hands a websocket opened before the listeners were attached to the upgrade listener, not as a plain request", () =>
    Effect.gen(function* () {
      const settings = yield* loadSettings({ "server.api.port": 0 })
      const server = makeNodeServer(settings, { logsRequests: false })
      yield* Effect.addFinalizer(() => Effect.promise(() => new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })))
      yield* Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve())))
      const port = (server.address() as AddressInfo).port
      // Opened right after the port opens, before the platform attaches its listeners.
      const socket = new WebSocket(`ws://127.0.0.1:${port}/v2/api/task_runs/subscriptions/scheduled`, ["prefect"])
      const opened = new Promise<string>((resolve) => {
        socket.on("open", () => resolve("open"))
        socket.on("unexpected-response", (_request, response) => resolve(`answered ${response.statusCode}`))
        socket.on("error", (error) => resolve(`error ${error.message}`))
      })
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 200)))
      const seen: Array<string> = []
      // The platform attaches both, the request listener first.
      server.on("request", (request: IncomingMessage, response) => {
        seen.push(`request ${request.url}`)
        response.writeHead(422).end()
      })
      const upgraded: Array<Duplex> = []
      server.on("upgrade", (request: IncomingMessage, connection: Duplex) => {
        seen.push(`upgrade ${request.url}`)
        upgraded.push(connection)
        const key = request.headers["sec-websocket-key"]!
        const accept = createHash("sha1").update(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64")
        connection.write(
          `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: prefect\r\n\r\n`
        )
      })
      expect(yield* Effect.promise(() => opened).pipe(Effect.timeout("5 seconds"))).toBe("open")
      expect(seen).toEqual(["upgrade /v2/api/task_runs/subscriptions/scheduled"])
      socket.terminate()
      for (const connection of upgraded) connection.destroy()
    }).pipe(Effect.scoped), 20_000)
})
