/**
 * GET /logs/out (websocket): after the handshake the client sends `{"type": "filter", "filter":
 * LogFilter}` and then receives `{"type": "log", "log": …}` for every new log the filter matches.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Either, Layer, Option, ParseResult, Queue, Schema } from "effect"
import { POLICY_VIOLATION, PROTOCOL_ERROR, servePrefectSocket } from "../http/websocket.ts"
import { Metrics } from "../http/metrics-registry.ts"
import { Settings } from "../settings/settings.ts"
import { Log, LogFilter } from "./schemas.ts"
import { LogStream, logMatches } from "./stream.ts"

const decodeFilter = Schema.decodeUnknownEither(LogFilter)
const encodeLog = Schema.encodeSync(Log)

export const LogsOutLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const stream = yield* LogStream
    const settings = yield* Settings
    const metrics = yield* Metrics
    yield* router.get(
      "/logs/out",
      servePrefectSocket(settings, metrics, (socket) =>
        Effect.gen(function* () {
          if (!stream.enabled) {
            return yield* socket.close(POLICY_VIOLATION, "Log streaming is off (server.logs.stream_out_enabled is false)")
          }
          const first = yield* socket.next
          if (Option.isNone(first)) return
          const message = first.value as { type?: unknown; filter?: unknown } | undefined
          if (message?.type !== "filter") return yield* socket.close(PROTOCOL_ERROR, "Expected 'filter' message")
          const filter = decodeFilter(message.filter ?? {})
          if (Either.isLeft(filter)) {
            return yield* socket.close(PROTOCOL_ERROR, `Invalid filter: ${ParseResult.TreeFormatter.formatIssueSync(filter.left.issue)}`)
          }
          yield* socket.discardIncoming
          const subscription = yield* stream.subscribe
          while (true) {
            const log = yield* Queue.take(subscription)
            if (logMatches(log, filter.right)) yield* socket.send({ type: "log", log: encodeLog(log) })
          }
        }).pipe(Effect.scoped)
      )
    )
  })
).pipe(Layer.provide([LogStream.Default, Metrics.Default]))
