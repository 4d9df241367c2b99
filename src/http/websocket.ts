/**
 * The websocket handshake the reference's clients speak. A client that offers the `prefect`
 * subprotocol sends `{"type": "auth", "token": …}` first and gets `{"type": "auth_success"}`; the
 * token must equal server.api.auth_string when one is set. A client without the subprotocol skips
 * that exchange, which only a server without an auth string allows.
 *
 * Every socket is under its guard (./websocket-guard.ts: frame sizes, the auth deadline, pings),
 * reads no further ahead of the session than a few messages, and a client that leaves more than
 * server.api.websockets.max_buffered_bytes unread for send_timeout is closed.
 */
import { HttpServerRequest, HttpServerResponse, type Socket } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Deferred, Effect, Fiber, Option, Redacted, type Scope } from "effect"
import type { IncomingMessage } from "node:http"
import { digestOf, sameDigest } from "../domain/secrets.ts"
import type { MetricsShape } from "./metrics-registry.ts"
import type { SettingsValue } from "../settings/settings.ts"
import { corsAllowsOrigin } from "./cors.ts"
import { pathnameOf } from "./paths.ts"
import { guardOf, POLICY_VIOLATION, SocketGuard, socketLimits } from "./websocket-guard.ts"

export { MESSAGE_TOO_BIG, POLICY_VIOLATION } from "./websocket-guard.ts"

/**
 * The websocket routes, below the base path. Their handshakes skip the HTTP Basic check (./auth.ts):
 * they authenticate with the first message instead, as the reference's clients expect.
 */
export const WEBSOCKET_PATHS: ReadonlySet<string> = new Set(["/events/in", "/events/out", "/logs/out"])

/** Close code of a handshake or a first message the protocol does not allow. */
export const PROTOCOL_ERROR = 1002

/** Messages, and bytes of them, received and not yet taken by the session beyond which reading from the client pauses. */
const INBOX_SIZE = 256
const INBOX_BYTES = 1024 * 1024

/** A message received: parsed as JSON (undefined for text that is not JSON), and how long its text was. */
export interface Incoming {
  readonly message: unknown
  /**
   * The length of the message as received: UTF-16 code units for a text frame (its UTF-8 bytes
   * are at most 3 times as many), bytes for a binary one.
   */
  readonly length: number
}

/** An accepted socket: JSON messages in, text frames out, and a way to close it with a reason. */
export interface PrefectSocket {
  /** The next message parsed as JSON (undefined for text that is not JSON); none once the client is gone. */
  readonly next: Effect.Effect<Option.Option<unknown>>
  /**
   * The next message and those received after it, up to `most` in all, with their lengths; none
   * once the client is gone.
   */
  readonly nextUpTo: (most: number) => Effect.Effect<ReadonlyArray<Incoming>>
  /** Sends a message; waits while the client is behind, and closes it when it stays behind too long. */
  readonly send: (message: unknown) => Effect.Effect<void>
  readonly close: (code: number, reason: string) => Effect.Effect<void>
  /** Completes when the client goes away. */
  readonly closed: Effect.Effect<void>
  /**
   * From now on messages are dropped as they come: for a session that reads no more, so that what
   * the client still sends never stops the socket from being read (and its pongs and close heard).
   */
  readonly discardIncoming: Effect.Effect<void>
}

interface Sending {
  /** Bytes the client may leave unread before sending waits (0: no limit). */
  readonly maxBuffered: number
  /** Milliseconds sending waits for the client before it is closed. */
  readonly timeoutMs: number
}

/** Whether `origin` names the host the handshake was sent to (a page of the server's own). */
const sameOrigin = (origin: string, host: string | undefined) => {
  if (host === undefined) return false
  try {
    return new URL(origin).host === host.toLowerCase()
  } catch {
    return false
  }
}

/**
 * Accepts the websocket of the current request and runs `session` on it, handshake done. A request
 * that may not connect is answered 403 before upgrading. While open, the socket counts in
 * `baton_websockets_open` under its route's path.
 */
export const servePrefectSocket = <R>(
  settings: SettingsValue,
  metrics: MetricsShape,
  session: (socket: PrefectSocket) => Effect.Effect<void, never, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Exclude<R, Scope.Scope> | HttpServerRequest.HttpServerRequest> => {
  const api = settings.server.api
  const expected = api.auth_string === null ? undefined : digestOf(Redacted.value(api.auth_string))
  const limits = socketLimits(settings)
  const allowsOrigin = corsAllowsOrigin(api)
  const sending: Sending = { maxBuffered: api.websockets.max_buffered_bytes, timeoutMs: api.websockets.send_timeout * 1000 }
  return Effect.scoped(
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      // A websocket route matches no plain HTTP request, as in the reference.
      if (request.headers.upgrade?.toLowerCase() !== "websocket") {
        return HttpServerResponse.unsafeJson({ detail: "Not Found" }, { status: 404 })
      }
      // Browsers send any page's websockets with the user's ambient access to the server, and no
      // CORS check applies to them: with CSRF protection on, only the origins CORS allows (and the
      // server's own pages) may open one. Clients other than browsers send no Origin.
      const origin = request.headers.origin
      if (api.csrf_protection_enabled && origin !== undefined && !allowsOrigin(origin) && !sameOrigin(origin, request.headers.host)) {
        return HttpServerResponse.unsafeJson(
          { detail: "Websocket connections from this origin are not allowed (server.api.cors_allowed_origins)." },
          { status: 403 }
        )
      }
      const offered = (request.headers["sec-websocket-protocol"] ?? "").split(",").map((p) => p.trim())
      const withSubprotocol = offered.includes("prefect")
      if (!withSubprotocol && expected !== undefined) {
        return HttpServerResponse.unsafeJson(
          { detail: "Websocket clients must use the 'prefect' subprotocol and authenticate." },
          { status: 403 }
        )
      }
      const connection = (NodeHttpServerRequest.toIncomingMessage(request) as IncomingMessage).socket
      // The Node server puts every handshake under a guard; a server made otherwise gets one here.
      const guard = guardOf(connection) ?? SocketGuard.attach(connection, limits)
      // Without the subprotocol there is nothing to authenticate with (and no auth string).
      if (!withSubprotocol) guard.authenticated()
      const raw = yield* Effect.orDie(request.upgrade)
      const socket = yield* accept(raw, guard, sending)
      // The route's own path (the edge took the base path off): one of a few, never a client's text.
      yield* metrics.websocketOpen(pathnameOf(request.url))
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
          guard.authenticated()
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

const accept = (raw: Socket.Socket, guard: SocketGuard, sending: Sending): Effect.Effect<PrefectSocket, never, Scope.Scope> =>
  Effect.gen(function* () {
    const write = yield* raw.writer
    const decoder = new TextDecoder()
    const parse = (text: string): unknown => {
      try {
        return JSON.parse(text)
      } catch {
        return undefined
      }
    }
    // Messages wait here for the session; past INBOX_SIZE or INBOX_BYTES the guard stops reading
    // from the client until the session has taken some.
    const inbox: Array<Incoming> = []
    let inboxBytes = 0
    const full = () => inbox.length >= INBOX_SIZE || inboxBytes >= INBOX_BYTES
    let ended = false
    let discarding = false
    let waiting: ((incoming: Incoming | undefined) => void) | undefined
    const deliver = (incoming: Incoming | undefined) => {
      const waiter = waiting
      waiting = undefined
      waiter?.(incoming)
    }
    const opened = yield* Deferred.make<void>()
    const reader = yield* raw
      .runRaw(
        (data) => {
          if (discarding) return
          const incoming: Incoming = typeof data === "string"
            ? { message: parse(data), length: data.length }
            : { message: parse(decoder.decode(data)), length: data.byteLength }
          if (waiting !== undefined) return deliver(incoming)
          inbox.push(incoming)
          inboxBytes += incoming.length
          if (full()) guard.pauseReading()
        },
        { onOpen: Effect.zipRight(Effect.sync(() => guard.upgraded()), Deferred.succeed(opened, undefined)) }
      )
      .pipe(
        Effect.ignore,
        Effect.ensuring(Effect.sync(() => {
          ended = true
          deliver(undefined)
        })),
        Effect.forkScoped
      )
    // Nothing is sent or closed before the handshake is answered.
    yield* Effect.raceFirst(Deferred.await(opened), Fiber.await(reader))
    /** The next message received, or undefined once the client is gone. */
    const nextIncoming = Effect.async<Incoming | undefined>((resume) => {
      if (inbox.length > 0) {
        const incoming = inbox.shift()!
        inboxBytes -= incoming.length
        if (!full()) guard.resumeReading()
        return resume(Effect.succeed(incoming))
      }
      if (ended) return resume(Effect.succeed(undefined))
      waiting = (incoming) => resume(Effect.succeed(incoming))
      return Effect.sync(() => {
        waiting = undefined
      })
    })
    const next = Effect.map(nextIncoming, (incoming) => (incoming === undefined ? Option.none() : Option.some(incoming.message)))
    const nextUpTo = (most: number) =>
      Effect.map(nextIncoming, (first): ReadonlyArray<Incoming> => {
        if (first === undefined) return []
        // Taken from the inbox in one piece rather than shifted out one at a time.
        const taken = inbox.splice(0, Math.min(most - 1, inbox.length))
        for (const incoming of taken) inboxBytes -= incoming.length
        if (!full()) guard.resumeReading()
        return [first, ...taken]
      })
    const close = (code: number, reason: string) => Effect.sync(() => guard.close(code, reason))
    const roomToSend = Effect.async<boolean>((resume) => {
      const cancel = guard.waitForRoom(sending.maxBuffered, sending.timeoutMs, (room) => resume(Effect.succeed(room)))
      return Effect.sync(cancel)
    })
    const send = (message: unknown) =>
      Effect.gen(function* () {
        if (guard.closing) return
        if (sending.maxBuffered > 0 && guard.backlog > sending.maxBuffered && !(yield* roomToSend)) {
          return yield* close(
            POLICY_VIOLATION,
            `Client too slow: more than ${sending.maxBuffered} bytes left unread for ${sending.timeoutMs / 1000} s`
          )
        }
        if (!guard.closing) yield* Effect.ignore(write(JSON.stringify(message)))
      })
    const discardIncoming = Effect.sync(() => {
      discarding = true
      inbox.length = 0
      inboxBytes = 0
      guard.resumeReading()
    })
    return { next, nextUpTo, send, close, closed: Fiber.await(reader).pipe(Effect.asVoid), discardIncoming }
  })
