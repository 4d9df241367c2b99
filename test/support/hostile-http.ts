/**
 * Local servers that answer badly, for tests of the server's outgoing calls: one that never answers,
 * one that trickles, one that sends an endless body, one that redirects, one that repeats the
 * request's secrets, and an address whose connections never complete. Each lives for the scope.
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http"
import { createServer as createHttpsServer } from "node:https"
import { createServer as createTcpServer, connect, type Server, type Socket } from "node:net"

/** The open sockets of each server, destroyed when it closes. */
const sockets = new WeakMap<Server, Set<Socket>>()
const tracked = <S extends Server>(server: S): S => {
  const open = new Set<Socket>()
  sockets.set(server, open)
  server.on("connection", (socket: Socket) => {
    open.add(socket)
    socket.on("close", () => open.delete(socket))
  })
  return server
}

/** Listens on a free loopback port for the scope's life; every socket is destroyed at the end. */
const listening = <S extends Server>(server: S) =>
  Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly url: string }>((resume) => {
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ port, url: `http://127.0.0.1:${port}` }))
      })
    }),
    () =>
      Effect.async<void>((resume) => {
        ;(server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.()
        for (const socket of sockets.get(server) ?? []) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  )

const http = (handler: (req: IncomingMessage, res: ServerResponse) => void) => listening(tracked(createHttpServer(handler)))

/** Accepts connections and never sends a byte. */
export const silentServer = () => listening(tracked(createTcpServer(() => {})))

/** Answers 200 at once, then one byte of body every `intervalMs`, forever. */
export const tricklingServer = (intervalMs = 50) =>
  http((_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" })
    const timer = setInterval(() => res.write("x"), intervalMs)
    res.on("close", () => clearInterval(timer))
  })

/** Answers 200 with a body of `bytes` (as fast as the reader takes it); counts what it could write. */
export const hugeBodyServer = (bytes: number) =>
  Effect.gen(function* () {
    const sent = { bytes: 0 }
    const chunk = Buffer.alloc(64 * 1024, "a")
    const server = yield* http((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": String(bytes) })
      const pump = () => {
        while (sent.bytes < bytes && !res.destroyed) {
          const piece = chunk.subarray(0, Math.min(chunk.length, bytes - sent.bytes))
          sent.bytes += piece.length
          if (!res.write(piece)) return void res.once("drain", pump)
        }
        if (!res.destroyed) res.end()
      }
      pump()
    })
    return { ...server, sent }
  })

/** Answers 302 to `location`. */
export const redirectingServer = (location: string) =>
  http((_req, res) => {
    res.writeHead(302, { location, "content-type": "text/plain" })
    res.end(`Found. Redirecting to ${location}`)
  })

/**
 * Answers `status` with a body and a Location header that repeat what the request carried: its
 * path and query and its basic-auth user and password (as an echo service or an error page might).
 */
export const echoingServer = (status = 200) =>
  Effect.gen(function* () {
    const requests: Array<{ readonly url: string; readonly authorization: string }> = []
    const server = yield* http((req, res) => {
      const authorization = Buffer.from((req.headers.authorization ?? "").replace(/^Basic /, ""), "base64").toString("utf8")
      requests.push({ url: req.url ?? "", authorization })
      req.resume()
      req.on("end", () => {
        res.writeHead(status, { "content-type": "text/plain", location: `http://${authorization}@${req.headers.host}${req.url}` })
        res.end(`You called ${req.url} as ${authorization} (${decodeURIComponent(req.url ?? "")})`)
      })
    })
    return { ...server, requests }
  })

/**
 * An HTTPS server answering 200 with a self-signed certificate for 127.0.0.1 (a test-only key in
 * test/support/tls, valid until 2126).
 */
export const selfSignedHttpsServer = () =>
  Effect.map(
    listening(
      tracked(
        createHttpsServer(
          {
            key: readFileSync(new URL("./tls/self-signed.key", import.meta.url)),
            cert: readFileSync(new URL("./tls/self-signed.crt", import.meta.url))
          },
          (_req, res) => {
            res.writeHead(200, { "content-type": "text/plain" })
            res.end("secure")
          }
        )
      )
    ),
    ({ port }) => ({ port, url: `https://127.0.0.1:${port}` })
  )

/** A loopback port nothing listens on: connections to it are refused. */
export const refusingPort = Effect.flatMap(
  Effect.scoped(listening(createTcpServer())),
  ({ port }) => Effect.succeed({ port, url: `http://127.0.0.1:${port}` })
)

/**
 * An address whose TCP handshake never completes, as a blackholed one: a listener in a child
 * process that never accepts (its event loop is blocked), whose accept queue is filled first, so
 * the kernel drops every further SYN.
 */
export const blackhole = () =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly close: () => void }>((resume) => {
      const child = spawn(
        process.execPath,
        [
          "-e",
          `const s = require("node:net").createServer();
           s.listen({ port: 0, host: "127.0.0.1", backlog: 1 }, () => {
             process.stdout.write(s.address().port + "\\n");
             setTimeout(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120000), 20);
           });`
        ],
        { stdio: ["ignore", "pipe", "ignore"] }
      )
      child.stdout.once("data", (data: Buffer) => {
        const port = Number(String(data).trim())
        setTimeout(() => {
          // Fill the accept queue (backlog + 1 on Linux), with some to spare.
          const fillers = Array.from({ length: 4 }, () => connect(port, "127.0.0.1").on("error", () => {}))
          setTimeout(
            () =>
              resume(
                Effect.succeed({
                  url: `http://127.0.0.1:${port}`,
                  close: () => {
                    for (const filler of fillers) filler.destroy()
                    child.kill("SIGKILL")
                  }
                })
              ),
            100
          )
        }, 100)
      })
    }),
    (hole) => Effect.sync(hole.close)
  )
