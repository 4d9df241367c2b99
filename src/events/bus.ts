/**
 * The event bus (server.events.messaging_broker): how the events clients send reach the event
 * persister, which writes them into the event log (events/log.ts), where every other reader takes
 * them. Received events are published once each (an id seen recently is dropped:
 * server.events.messaging_cache); a consumer group (`consume`) takes each once and acknowledges
 * what it has handled.
 *
 * "memory" keeps them in the receiving process until its persister writes them (within its
 * flush interval). "redis" publishes to a Redis stream (`redis_stream` at `redis_url`, trimmed to
 * about queue_max_size entries): the persisters of every replica form one Redis consumer group, so
 * an event is written by one of them, and what a replica read but did not acknowledge (it died) is
 * claimed by another after a minute. The cache of seen ids is then a Redis key per event (an hour).
 */
import { Clock, Duration, Effect, Option, PubSub, Queue, Schema, type Scope } from "effect"
import { hostname } from "node:os"
import { RecentSet } from "../domain/recent.ts"
import { realClock } from "../domain/time.ts"
import { Metrics } from "../http/metrics-registry.ts"
import { Settings } from "../settings/settings.ts"
import { redisConnection } from "./redis.ts"
import { ReceivedEvent } from "./schemas.ts"

/** How many recent event ids are remembered to drop repeats (memory cache). */
const RECENT_IDS = 10_000
/**
 * How a consumer of the redis broker takes over what a dead one read: every `everyMs` it claims the
 * entries read more than `idleMs` ago and never acknowledged (in rounds of CLAIM_COUNT, up to
 * CLAIM_MOST), and removes the consumers idle for `deadAfterMs` that hold none. An entry claimed
 * from a reader that was only slow is written twice, which stores it once (events are kept by id).
 */
export interface ClaimTimings {
  readonly everyMs: number
  readonly idleMs: number
  readonly deadAfterMs: number
}

const CLAIM_TIMINGS: ClaimTimings = { everyMs: 5_000, idleMs: 15_000, deadAfterMs: 3_600_000 }
const CLAIM_COUNT = 100
/** Entries a consumer reads ahead of what it has handled. */
const READ_AHEAD = 1_000
const CLAIM_MOST = 1_000
const SEEN_TTL_SECONDS = 3600
/**
 * When the persister's backlog is full (memory broker), a publisher waits for room: the sender (a
 * POST, an /events/in socket, whose reading then pauses) is held back rather than the oldest
 * waiting events dropped, for as long as the persister is taking events. After this long without
 * it taking any (a database away, a persister that does not run), the oldest are dropped (and
 * counted in baton_events_dropped_total).
 */
const ROOM_WAIT_MS = 5_000
/**
 * What a consumer group reads: the events, and how to acknowledge the ones it has handled. With the
 * redis broker nothing is read until `start` (the service's first iteration), so a process that
 * does not run the service (an API-only replica) takes no events away from the ones that do.
 */
export interface Consumption {
  readonly events: Queue.Dequeue<ReceivedEvent>
  readonly ack: (events: ReadonlyArray<ReceivedEvent>) => Effect.Effect<void>
  readonly start: Effect.Effect<void>
}

const decodeEvent = Schema.decodeUnknownSync(Schema.parseJson(ReceivedEvent))
const encodeEvent = Schema.encodeSync(Schema.parseJson(ReceivedEvent))

export class EventBus extends Effect.Service<EventBus>()("baton/EventBus", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const metrics = yield* Metrics
    const events = settings.server.events
    const broker = events.messaging_broker === "redis" ? "redis" : "memory"
    if (broker !== events.messaging_broker) {
      yield* Effect.logWarning(`server.events.messaging_broker=${events.messaging_broker} is not known; events stay in this process`)
    }
    // A subscriber that falls further behind than this loses the oldest events, not the server its memory.
    const capacity = settings.server.services.event_persister.queue_max_size
    const hub = yield* Effect.acquireRelease(PubSub.sliding<ReceivedEvent>(capacity), PubSub.shutdown)
    const recent = new RecentSet<string>(RECENT_IDS)
    const rememberLocally = (id: string) => recent.add(id)

    const connect = () => redisConnection(events.redis_url)
    const redis = broker === "redis" || events.messaging_cache === "redis" ? yield* connect() : undefined
    const stream = events.redis_stream

    /** The events whose id was not seen recently (in this process, or across replicas with the Redis cache). */
    const fresh = (batch: ReadonlyArray<ReceivedEvent>) =>
      redis !== undefined && events.messaging_cache === "redis"
        ? Effect.promise(async () => {
          const pipeline = redis.pipeline()
          for (const event of batch) pipeline.set(`${stream}:seen:${event.id}`, "1", "EX", SEEN_TTL_SECONDS, "NX")
          const results = (await pipeline.exec()) ?? []
          return batch.filter((_, i) => results[i]?.[1] === "OK")
        })
        : Effect.sync(() => batch.filter((event) => rememberLocally(event.id)))

    /** Events published on the memory broker so far: with the backlog's size, how many its consumer took. */
    let published = 0

    /** Waits until `count` more events fit in the backlog (see ROOM_WAIT_MS). */
    const roomFor = (count: number) =>
      Effect.gen(function* () {
        let deadline = (yield* Clock.currentTimeMillis) + ROOM_WAIT_MS
        const needed = Math.min(count, capacity)
        let pause = 1
        let backlog = yield* PubSub.size(hub)
        let taken = published - backlog
        while (backlog + needed > capacity) {
          const at = yield* Clock.currentTimeMillis
          if (at >= deadline) {
            return yield* Effect.logWarning(
              `The event backlog is full (${capacity} events, server.services.event_persister.queue_max_size): the oldest waiting events are dropped`
            )
          }
          yield* Effect.sleep(Duration.millis(pause))
          pause = Math.min(pause * 2, 50)
          backlog = yield* PubSub.size(hub)
          // The persister took events meanwhile (whatever others published): worth waiting on.
          if (published - backlog > taken) deadline = at + ROOM_WAIT_MS
          taken = published - backlog
        }
      }).pipe(Effect.withClock(realClock))

    /**
     * Publishes on the memory broker. What does not fit (after roomFor gave up waiting) pushes the
     * oldest waiting events out: counted as dropped.
     */
    const publishInMemory = (batch: ReadonlyArray<ReceivedEvent>) =>
      Effect.suspend(() => {
        const waiting = Option.getOrElse(hub.unsafeSize(), () => 0)
        const dropped = Math.max(0, waiting + batch.length - capacity)
        published += batch.length
        return Effect.zipRight(PubSub.publishAll(hub, batch), dropped > 0 ? metrics.eventsDropped(dropped) : Effect.void)
      })

    /** Publishes the events not published recently; those. */
    const publish = (batch: ReadonlyArray<ReceivedEvent>) =>
      Effect.flatMap(fresh(batch), (unseen) => {
        if (unseen.length === 0) return Effect.succeed(unseen)
        if (broker === "memory") {
          return Effect.as(Effect.zipRight(roomFor(unseen.length), publishInMemory(unseen)), unseen)
        }
        return Effect.as(
          Effect.promise(async () => {
            const pipeline = redis!.pipeline()
            for (const event of unseen) pipeline.xadd(stream, "MAXLEN", "~", capacity, "*", "event", encodeEvent(event))
            await pipeline.exec()
          }),
          unseen
        )
      })

    /** Reads stream entries into `queue` until the scope closes, with `read` giving the next entries. */
    const pump = (
      queue: Queue.Queue<ReceivedEvent>,
      read: () => Promise<ReadonlyArray<[string, ReadonlyArray<string>]>>,
      onEntry: (entryId: string, event: ReceivedEvent) => void
    ) =>
      Effect.gen(function* () {
        const entries = yield* Effect.tryPromise(read)
        for (const [entryId, fields] of entries) {
          const index = fields.indexOf("event")
          if (index < 0) continue
          try {
            const event = decodeEvent(fields[index + 1])
            onEntry(entryId, event)
            yield* Queue.offer(queue, event)
          } catch {
            // Not an event of ours: skip it.
          }
        }
      }).pipe(
        Effect.catchAll((error) => Effect.zipRight(Effect.logWarning("Reading the event stream failed", error), Effect.sleep(Duration.seconds(1)))),
        Effect.forever
      )

    /**
     * The events for consumer group `group`; each event reaches one consumer of the group. With the
     * redis broker, `readBatchSize` entries are read from the stream at a time, at most READ_AHEAD
     * ahead of what is handled.
     */
    const consume = (group: string, readBatchSize = 100, claim: ClaimTimings = CLAIM_TIMINGS): Effect.Effect<Consumption, never, Scope.Scope> =>
      broker === "memory"
        ? Effect.map(PubSub.subscribe(hub), (events) => ({ events, ack: () => Effect.void, start: Effect.void }))
        : Effect.gen(function* () {
          const queue = yield* Effect.acquireRelease(Queue.bounded<ReceivedEvent>(READ_AHEAD), Queue.shutdown)
          const reader = yield* connect()
          const consumer = `${hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`
          yield* Effect.promise(() =>
            redis!.xgroup("CREATE", stream, group, "$", "MKSTREAM").catch((error: Error) => {
              if (!String(error.message).includes("BUSYGROUP")) throw error
            })
          )
          const entryIds = new Map<string, string>()
          let claimed = 0
          /** Takes over what dead consumers read and never acknowledged, and forgets the dead. */
          const claimFromTheDead = async () => {
            const taken: Array<[string, Array<string>]> = []
            let cursor = "0-0"
            do {
              const reply = (await reader.xautoclaim(stream, group, consumer, claim.idleMs, cursor, "COUNT", CLAIM_COUNT)) as [
                string,
                Array<[string, Array<string>] | null>
              ]
              cursor = reply?.[0] ?? "0-0"
              for (const entry of reply?.[1] ?? []) if (entry !== null) taken.push(entry)
            } while (cursor !== "0-0" && taken.length < CLAIM_MOST)
            const consumers = (await reader.xinfo("CONSUMERS", stream, group)) as Array<Array<string | number>>
            for (const info of consumers) {
              const field = (name: string) => info[info.indexOf(name) + 1]
              if (field("name") !== consumer && Number(field("pending")) === 0 && Number(field("idle")) > claim.deadAfterMs) {
                await reader.xgroup("DELCONSUMER", stream, group, String(field("name")))
              }
            }
            return taken
          }
          const read = async (): Promise<ReadonlyArray<[string, ReadonlyArray<string>]>> => {
            if (Date.now() - claimed > claim.everyMs) {
              claimed = Date.now()
              const taken = await claimFromTheDead()
              if (taken.length > 0) return taken
            }
            const reply = (await reader.xreadgroup("GROUP", group, consumer, "COUNT", readBatchSize, "BLOCK", 1000, "STREAMS", stream, ">")) as Array<
              [string, Array<[string, Array<string>]>]
            > | null
            return reply?.[0]?.[1] ?? []
          }
          const scope = yield* Effect.scope
          const start = yield* Effect.cached(
            Effect.asVoid(Effect.forkIn(pump(queue, read, (entryId, event) => entryIds.set(event.id, entryId)), scope))
          )
          const ack = (handled: ReadonlyArray<ReceivedEvent>) => {
            const ids = handled.flatMap((event) => {
              const entryId = entryIds.get(event.id)
              entryIds.delete(event.id)
              return entryId === undefined ? [] : [entryId]
            })
            return ids.length === 0
              ? Effect.void
              : Effect.promise(() => redis!.xack(stream, group, ...ids).catch(() => 0)).pipe(Effect.asVoid)
          }
          return { events: queue, ack, start }
        })

    return { publish, consume, broker } as const
  }),
  dependencies: [Metrics.Default]
}) {}
