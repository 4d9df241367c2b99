/**
 * The websocket handshake the reference's clients speak. A client that offers the `prefect`
 * subprotocol sends `{"type": "auth", "token": …}` first and gets `{"type": "auth_success"}`; the
 * token must equal server.api.auth_string when one is set. A client without the subprotocol skips
 * that exchange, which only a server without an auth string allows.
 */
import { HttpServerRequest, HttpServerResponse, Socket } from "@effect/platform"
import { Effect, Fiber, Option, Queue, Redacted, type Scope } from "effect"
import { digestOf, sameDigest } from "../domain/secrets.ts"
import type { SettingsValue } from "../settings/settings.ts"

/**
 * The websocket routes, below the base path. Their handshakes skip the HTTP Basic check (./auth.ts):
 * they authenticate with the first message instead, as the reference's clients expect.
 */
export const WEBSOCKET_PATHS: ReadonlySet<string> = new Set(["/events/in", "/events/out", "/logs/out"])

/** Close codes a handshake or a first message can end with. */
export const PROTOCOL_ERROR = 1002
export const POLICY_VIOLATION = 1008

/** A close reason is at most 123 bytes. */
const closeReason = (reason: string) => {
  let out = reason
  while (Buffer.byteLength(out) > 123) out = out.slice(0, -1)
  return out
}

/** An accepted socket: JSON messages in, text frames out, and a way to close it with a reason. */
export interface PrefectSocket {
  /** The next message parsed as JSON (undefined for text that is not JSON); none once the client is gone. */
  readonly next: Effect.Effect<Option.Option<unknown>>
  readonly send: (message: unknown) => Effect.Effect<void>
  readonly close: (code: number, reason: string) => Effect.Effect<void>
  /** Completes when the client goes away. */
  readonly closed: Effect.Effect<void>
}

/**
 * Accepts the websocket of the current request and runs `session` on it, handshake done. A request
 * that may not connect is answered 403 before upgrading.
 */
export const servePrefectSocket = <R>(
  settings: SettingsValue,
  session: (socket: PrefectSocket) => Effect.Effect<void, never, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Exclude<R, Scope.Scope> | HttpServerRequest.HttpServerRequest> => {
  const authString = settings.server.api.auth_string
  const expected = authString === null ? undefined : digestOf(Redacted.value(authString))
  return Effect.scoped(
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      // A websocket route matches no plain HTTP request, as in the reference.
      if (request.headers.upgrade?.toLowerCase() !== "websocket") {
        return HttpServerResponse.unsafeJson({ detail: "Not Found" }, { status: 404 })
      }
      const offered = (request.headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim())
      const withSubprotocol = offered.includes("prefect")
      if (!withSubprotocol && expected !== undefined) {
        return HttpServerResponse.unsafeJson(
          { detail: "Websocket clients must use the 'prefect' subprotocol and authenticate." },
          { status: 403 }
        )
      }
      const raw = yield* Effect.orDie(request.upgrade)
      const socket = yield* accept(raw)
      const run = Effect.gen(function* () {
        if (withSubprotocol) {
          const first = yield* socket.next
          if (Option.isNone(first)) return
          const message = first.value as { type?: unknown; token?: unknown } | undefined
          if (message?.type !== "auth") return yield* socket.close(POLICY_VIOLATION, "Expected 'auth' message")
          if (expected !== undefined) {
            if (typeof message.token !== "string" || message.token === "") {
              return yield* socket.close(POLICY_VIOLATION, "Auth required but no token provided")
            }
            if (!sameDigest(message.token, expected)) return yield* socket.close(POLICY_VIOLATION, "Invalid token")
          }
          yield* socket.send({ type: "auth_success" })
        }
        yield* session(socket)
      })
      // The session ends when it is done or when the client goes away, whichever is first.
      yield* Effect.raceFirst(run, socket.closed)
      return HttpServerResponse.empty()
    })
  )
}

const accept = (raw: Socket.Socket): Effect.Effect<PrefectSocket, never, Scope.Scope> =>
  Effect.gen(function* () {
    const inbox = yield* Queue.unbounded<Option.Option<unknown>>()
    const write = yield* raw.writer
    const decoder = new TextDecoder()
    const parse = (text: string): unknown => {
      try {
        return JSON.parse(text)
      } catch {
        return undefined
      }
    }
    const reader = yield* raw
      .runRaw((data) => Queue.offer(inbox, Option.some(parse(typeof data === "string" ? data : decoder.decode(data)))))
      .pipe(
        Effect.ignore,
        Effect.zipRight(Queue.offer(inbox, Option.none())),
        Effect.forkScoped
      )
    const next = Effect.tap(Queue.take(inbox), (message) => (Option.isNone(message) ? Queue.offer(inbox, message) : Effect.void))
    return {
      next,
      send: (message) => Effect.ignore(write(JSON.stringify(message))),
      close: (code, reason) => Effect.ignore(write(new Socket.CloseEvent(code, closeReason(reason)))),
      closed: Fiber.await(reader).pipe(Effect.asVoid)
    }
  })
