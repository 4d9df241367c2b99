/** A websocket client for tests: what the server sent, how it closed, or how it refused the handshake. */
import { Effect } from "effect"
import WebSocket from "ws"
import { apiUrl, type Json } from "./server.ts"

export interface TestSocket {
  readonly send: (message: unknown) => void
  /** The next message the server sends, parsed (fails the test after `ms` without one). */
  readonly next: (ms?: number) => Promise<Json>
  /** Resolves with the close code and reason once the socket closes. */
  readonly closed: Promise<{ code: number; reason: string }>
  readonly close: () => void
  /** The client itself (to pause reading, send raw frames …). */
  readonly raw: WebSocket
}

/** Opens a websocket to `path` below the test server's API base; the HTTP status when the server refuses it (0: no answer). */
export const connect = (
  path: string,
  protocols: Array<string> = ["prefect"],
  headers: Record<string, string> = {},
  options: WebSocket.ClientOptions = {}
) => Effect.flatMap(apiUrl, (base) => connectTo(base, path, protocols, headers, options))

/** `connect` to the API at `base` (another process's, say). */
export const connectTo = (
  base: string,
  path: string,
  protocols: Array<string> = ["prefect"],
  headers: Record<string, string> = {},
  options: WebSocket.ClientOptions = {}
) =>
  Effect.promise(
    () =>
      new Promise<TestSocket | { refused: number }>((resolve) => {
        const socket = new WebSocket(base.replace(/^http/, "ws") + path, protocols, { ...options, headers })
        const inbox: Array<Json> = []
        const waiting: Array<(message: Json) => void> = []
        socket.on("message", (data) => {
          const message = JSON.parse(data.toString())
          const waiter = waiting.shift()
          if (waiter) waiter(message)
          else inbox.push(message)
        })
        const closed = new Promise<{ code: number; reason: string }>((done) =>
          socket.on("close", (code, reason) => done({ code, reason: reason.toString() }))
        )
        socket.on("unexpected-response", (_request, response) => resolve({ refused: response.statusCode ?? 0 }))
        // A handshake the server drops without an answer (a promise resolves only once).
        socket.on("error", () => resolve({ refused: 0 }))
        socket.on("open", () =>
          resolve({
            send: (message) => socket.send(typeof message === "string" ? message : JSON.stringify(message)),
            next: (ms = 5000) =>
              inbox.length > 0
                ? Promise.resolve(inbox.shift()!)
                : new Promise<Json>((done, fail) => {
                  const waiter = (message: Json) => {
                    clearTimeout(timer)
                    done(message)
                  }
                  // A wait that timed out leaves the queue: the next message is the next call's.
                  const timer = setTimeout(() => {
                    waiting.splice(waiting.indexOf(waiter), 1)
                    fail(new Error(`no message within ${ms} ms`))
                  }, ms)
                  waiting.push(waiter)
                }),
            closed,
            close: () => socket.close(),
            raw: socket
          })
        )
      })
  )

/** The socket, when the handshake succeeded. */
export const opened = (result: TestSocket | { refused: number }): TestSocket => {
  if ("refused" in result) throw new Error(`websocket refused with HTTP ${result.refused}`)
  return result
}
