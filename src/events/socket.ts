/**
 * The event websockets. /events/in: after the handshake every message is one event, received as a
 * POST /events would receive it. /events/out: after a `{"type": "filter", "filter": …, "backfill":
 * true}` message, the stored events of the last `maximum_websocket_backfill` the filter matches
 * (oldest first, a page at a time), then every new one that enters the event log (through any
 * process on the database), each as `{"type": "event", "event": …}`.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Duration, Effect, Either, Layer, Option, ParseResult, Queue, Schema } from "effect"
import { now } from "../domain/time.ts"
import { PROTOCOL_ERROR, POLICY_VIOLATION, servePrefectSocket } from "../http/websocket.ts"
import { Metrics } from "../http/metrics-registry.ts"
import { Settings } from "../settings/settings.ts"
import { decodePlainEvent } from "./decode.ts"
import { EventLog } from "./log.ts"
import { EventFilter, eventMatches, resolveFilter } from "./filter.ts"
import { EventsRepo } from "./repo.ts"
import { Event, ReceivedEvent } from "./schemas.ts"
import { Events } from "./service.ts"

const decodeEvent = Schema.decodeUnknownEither(Event)
const decodeFilter = Schema.decodeUnknownEither(EventFilter)
const encodeEvent = Schema.encodeSync(ReceivedEvent)
const INVALID_PAYLOAD = 1007
/** Events of /events/in received together, at most. */
const BATCH = 200

const describe = (issue: ParseResult.ParseIssue) => ParseResult.TreeFormatter.formatIssueSync(issue)

export const EventSocketsLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const metrics = yield* Metrics
    const events = yield* Events
    const log = yield* EventLog
    const repo = yield* EventsRepo
    const backfillWindow = Duration.toMillis(settings.server.events.maximum_websocket_backfill)
    const pageSize = settings.server.events.websocket_backfill_page_size

    yield* router.get(
      "/events/in",
      servePrefectSocket(settings, metrics, (socket) =>
        Effect.gen(function* () {
          const refuse = (detail: string) => socket.close(INVALID_PAYLOAD, `Invalid event: ${detail}`)
          /** Receives the events one at a time: what a batch with a refused event falls back to. */
          const receiveEach = (batch: ReadonlyArray<Event>, textBytes: ReadonlyArray<number>) =>
            Effect.gen(function* () {
              for (let i = 0; i < batch.length; i++) {
                const received = yield* Effect.either(events.receive([batch[i]!], [], () => textBytes[i]!))
                if (Either.isLeft(received)) return Option.some(received.left.detail)
              }
              return Option.none()
            })
          while (true) {
            // What has arrived meanwhile is received as one batch (as a POST of several events is).
            const messages = yield* socket.nextUpTo(BATCH)
            if (messages.length === 0) return
            const batch: Array<Event> = []
            // At most 3 bytes of UTF-8 per character of the message (or per byte of a binary one).
            const textBytes: Array<number> = []
            let invalid: string | undefined
            for (const { length, message } of messages) {
              const plain = decodePlainEvent(message)
              if (plain === undefined) {
                const event = decodeEvent(message)
                if (Either.isLeft(event)) {
                  invalid = describe(event.left.issue)
                  break
                }
                batch.push(event.right)
              } else {
                batch.push(plain)
              }
              textBytes.push(3 * length)
            }
            // The events before a refused one are received, as they would be one message at a time.
            const received = yield* Effect.either(events.receive(batch, [], (i) => textBytes[i]!))
            const refused = Either.isRight(received) ? Option.none() : yield* receiveEach(batch, textBytes)
            if (Option.isSome(refused)) {
              const detail = refused.value
              return yield* refuse(typeof detail === "string" ? detail : detail[0]?.msg ?? "")
            }
            if (invalid !== undefined) return yield* refuse(invalid)
          }
        })
      )
    )

    yield* router.get(
      "/events/out",
      servePrefectSocket(settings, metrics, (socket) =>
        Effect.gen(function* () {
          if (!settings.server.events.stream_out_enabled) {
            return yield* socket.close(POLICY_VIOLATION, "Event streaming is off (server.events.stream_out_enabled is false)")
          }
          const first = yield* socket.next
          if (Option.isNone(first)) return
          const message = first.value as { type?: unknown; filter?: unknown; backfill?: unknown } | undefined
          if (message?.type !== "filter") return yield* socket.close(PROTOCOL_ERROR, "Expected 'filter' message")
          const decoded = decodeFilter(message.filter ?? {})
          if (Either.isLeft(decoded)) return yield* socket.close(PROTOCOL_ERROR, `Invalid filter: ${describe(decoded.left.issue)}`)
          yield* socket.discardIncoming
          const at = yield* now
          const resolved = resolveFilter(decoded.right, at)
          // Never further back than the backfill window; live events are not bounded by `until`.
          const earliest = new Date(Math.max(resolved.occurred.since.getTime(), at.getTime() - backfillWindow))
          const filter = { ...resolved, order: "ASC" as const, occurred: { since: earliest, until: resolved.occurred.until } }
          // Subscribe first, so nothing that arrives during the backfill is missed.
          const live = yield* log.subscribe
          const sent = new Set<string>()
          if (message.backfill !== false) {
            for (let offset = 0; ; offset += pageSize) {
              const page = yield* repo.read(filter, pageSize, offset)
              for (const event of page) {
                sent.add(event.id)
                yield* socket.send({ type: "event", event: encodeEvent(event) })
              }
              if (page.length < pageSize) break
            }
          }
          const liveFilter = { ...filter, occurred: { since: earliest, until: new Date(8.64e15) } }
          while (true) {
            const event = yield* Queue.take(live)
            if (sent.delete(event.id) || !eventMatches(liveFilter, event)) continue
            yield* socket.send({ type: "event", event: encodeEvent(event) })
          }
        }).pipe(Effect.scoped)
      )
    )
  })
).pipe(Layer.provide([EventLog.Default, Events.Default, EventsRepo.Default, Metrics.Default]))
