/**
 * Requests fetch cannot make (an Upgrade header, a chunked body, a body announced but not sent) and
 * plain sockets for timing tests, against the test server.
 */
import { Effect } from "effect"
import * as http from "node:http"
import * as net from "node:net"
import { type Json, serverUrl } from "./server.ts"

export interface RawAnswer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly body: Json
}

export interface RawRequestOptions {
  readonly headers?: Record<string, string>
  /** Written as it is; with no content-length header it goes chunked. */
  readonly chunks?: ReadonlyArray<string | Buffer>
  /** End the request after the chunks (default true). */
  readonly end?: boolean
}

/** One request with node:http to `path` (from the server root); the answer, whatever the client still sends. */
export const rawRequest = (method: string, path: string, options: RawRequestOptions = {}) =>
  Effect.flatMap(serverUrl, (root) =>
    Effect.async<RawAnswer, Error>((resume) => {
      const url = new URL(root + path)
      const req = http.request({ method, host: url.hostname, port: url.port, path: url.pathname + url.search, headers: options.headers, agent: false })
      req.on("response", (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (chunk) => (text += chunk))
        res.on("end", () => {
          let body: Json
          try {
            body = JSON.parse(text)
          } catch {
            // Not JSON: the test reads `text`.
            body = undefined as unknown as Json
          }
          resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, text, body }))
        })
      })
      // The server may close the connection while the body is still going out: the answer counts.
      req.on("error", (error) => resume(Effect.fail(error)))
      req.flushHeaders()
      for (const chunk of options.chunks ?? []) req.write(chunk)
      if (options.end !== false) req.end()
      return Effect.sync(() => req.destroy())
    })
  )

/** A TCP connection to the test server, with what it received and whether the server closed it. */
export const rawSocket = Effect.flatMap(serverUrl, (root) =>
  Effect.async<{ readonly socket: net.Socket; readonly received: () => string; readonly closed: Promise<number> }>((resume) => {
    const url = new URL(root)
    const socket = net.connect(Number(url.port), url.hostname)
    let received = ""
    const started = Date.now()
    const closed = new Promise<number>((done) => socket.on("close", () => done(Date.now() - started)))
    socket.on("data", (chunk) => (received += chunk.toString()))
    socket.on("error", () => {})
    socket.on("connect", () => resume(Effect.succeed({ socket, received: () => received, closed })))
  })
)

/**
 * A client that goes away while sending its body: `POST /v2/api/flows/` with headers promising 1000
 * bytes, half of them, then, 200 ms later, the connection closes.
 */
export const abandonedBody = Effect.flatMap(serverUrl, (root) =>
  Effect.async<void>((resume) => {
    const socket = net.connect(Number(new URL(root).port), "127.0.0.1", () => {
      socket.write("POST /v2/api/flows/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
      socket.write(`{"name": "${"a".repeat(480)}`)
      setTimeout(() => {
        socket.destroy()
        resume(Effect.void)
      }, 200)
    })
  }))
