import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Queue } from "effect"
import { Redis } from "ioredis"
import { PRECEDING_EVENT_LOOKBACK_MS, redisOrdering } from "../../src/automations/ordering.ts"
import { EventBus } from "../../src/events/bus.ts"
import type { ReceivedEvent } from "../../src/events/schemas.ts"
import { layer as settingsLayer } from "../../src/settings/settings.ts"

const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0"
const stream = `baton:test:${process.pid}-${Math.random().toString(36).slice(2, 8)}`

/** One replica's event bus on the shared Redis stream (trimmed to about `capacity` entries). */
const replicaOf = (capacity: number) => Effect.map(
  Layer.build(
    EventBus.Default.pipe(
      Layer.provide(
        settingsLayer({
          "server.events.messaging_broker": "redis",
          "server.events.messaging_cache": "redis",
          "server.events.redis_url": REDIS_URL,
          "server.events.redis_stream": stream,
          "server.services.event_persister.queue_max_size": capacity
        })
      )
    )
  ),
  (context) => context.unsafeMap.get(EventBus.key) as EventBus
)
const replica = replicaOf(100)

let counter = 0
const event = (name: string): ReceivedEvent => ({
  id: `00000000-0000-4000-b000-${String(++counter).padStart(12, "0")}`,
  occurred: new Date("2026-11-24T10:00:00Z"),
  received: new Date("2026-11-24T10:00:01Z"),
  event: name,
  resource: { "prefect.resource.id": `thing.${counter}` },
  related: [],
  payload: { n: counter },
  follows: null
})

/** Takes from `queues` until `count` events arrived in total (or a few seconds passed). */
const collect = (queues: ReadonlyArray<Queue.Dequeue<ReceivedEvent>>, count: number) =>
  Effect.gen(function* () {
    const got: Array<Array<ReceivedEvent>> = queues.map(() => [])
    for (let attempt = 0; attempt < 100 && got.flat().length < count; attempt++) {
      for (const [i, queue] of queues.entries()) got[i]!.push(...(yield* Queue.takeAll(queue)))
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
    }
    return got
  })

describe("the redis broker (against the machine's Redis)", () => {
  it.live(
    "shares events between replicas: each consumer group gets every event once, repeats are dropped, the stream is trimmed",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const redis = new Redis(REDIS_URL)
          yield* Effect.addFinalizer(() => Effect.promise(async () => {
            await redis.del(stream)
            await redis.quit()
          }))
          const a = yield* replica
          const b = yield* replica
          const persistA = yield* a.consume("persister")
          const persistB = yield* b.consume("persister")
          const triggersB = yield* b.consume("triggers")
          // A replica that does not run the persister (it never starts reading) takes nothing away.
          const idle = yield* (yield* replica).consume("persister")
          yield* Effect.all([persistA.start, persistB.start, triggersB.start])

          const batch = Array.from({ length: 10 }, (_, i) => event(`e${i}`))
          yield* a.publish(batch)
          // A repeat through the other replica is dropped.
          yield* b.publish([batch[0]!])

          const [fromA, fromB] = yield* collect([persistA.events, persistB.events], 10)
          const persisted = [...fromA!, ...fromB!]
          expect(persisted.map((e) => e.id).sort()).toEqual(batch.map((e) => e.id).sort())
          expect(persisted[0]!.occurred).toBeInstanceOf(Date)
          expect(yield* Queue.size(idle.events)).toBe(0)
          const [triggered] = yield* collect([triggersB.events], 10)
          expect(triggered!.map((e) => e.event)).toEqual(batch.map((e) => e.event))

          // Read but not acknowledged: pending in the group until acknowledged.
          const pending = async (group: string) => ((await redis.xpending(stream, group)) as [number])[0]
          expect(yield* Effect.promise(() => pending("persister"))).toBe(10)
          yield* persistA.ack(fromA!)
          yield* persistB.ack(fromB!)
          expect(yield* Effect.promise(() => pending("persister"))).toBe(0)
          expect(yield* Effect.promise(() => pending("triggers"))).toBe(10)

          // The stream is kept to about queue_max_size entries.
          yield* a.publish(Array.from({ length: 500 }, (_, i) => event(`bulk${i}`)))
          const length = yield* Effect.promise(() => redis.xlen(stream))
          expect(length).toBeLessThan(500)
        })
      ),
    30_000
  )
})

describe("a dead consumer of the redis broker (against the machine's Redis)", () => {
  it.live("has what it read and never acknowledged taken over by a live one in rounds, and is then forgotten", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const redis = new Redis(REDIS_URL)
        yield* Effect.addFinalizer(() => Effect.promise(async () => {
          await redis.del(stream)
          await redis.quit()
        }))
        const timings = { everyMs: 100, idleMs: 1000, deadAfterMs: 1500 }
        // The one that dies reads 250 entries (more than one claim round) and acknowledges none.
        const dying = yield* Effect.scoped(Effect.gen(function* () {
          const bus = yield* replicaOf(10_000)
          const reader = yield* bus.consume("taken-over", 100, timings)
          yield* reader.start
          const batch = Array.from({ length: 250 }, (_, i) => event(`unacked${i}`))
          for (let i = 0; i < batch.length; i += 50) yield* bus.publish(batch.slice(i, i + 50))
          const [read] = yield* collect([reader.events], 250)
          expect(read).toHaveLength(250)
          return batch
        }))
        const consumersNow = async () =>
          ((await redis.xinfo("CONSUMERS", stream, "taken-over")) as Array<Array<string | number>>).map((info) => info[info.indexOf("name") + 1])
        expect(yield* Effect.promise(consumersNow)).toHaveLength(1)

        const survivor = yield* (yield* replicaOf(10_000)).consume("taken-over", 100, timings)
        yield* survivor.start
        const [taken] = yield* collect([survivor.events], 250)
        expect(taken!.map((e) => e.id).sort()).toEqual(dying.map((e) => e.id).sort())
        yield* survivor.ack(taken!)
        // Holding nothing and idle past deadAfterMs, the dead one is removed at a later round.
        yield* Effect.promise(async () => {
          for (let attempt = 0; attempt < 50 && (await consumersNow()).length > 1; attempt++) await new Promise((r) => setTimeout(r, 100))
        })
        expect(yield* Effect.promise(consumersNow)).toHaveLength(1)
      })
    ), 30_000)
})

describe("causal ordering in Redis (against the machine's Redis)", () => {
  it.live("a follower held by one replica is released by the replica that evaluates its leader, or given up after the lookback", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const prefix = `${stream}:ordering`
        const redis = new Redis(REDIS_URL)
        yield* Effect.addFinalizer(() => Effect.promise(async () => {
          const keys = await redis.keys(`${prefix}:*`)
          if (keys.length > 0) await redis.del(...keys)
          await redis.quit()
        }))
        const a = yield* redisOrdering(REDIS_URL, prefix)
        const b = yield* redisOrdering(REDIS_URL, prefix)
        const leader = event("leader")
        const follower = { ...event("follower"), follows: leader.id }
        const at = follower.received.getTime() + 1000
        expect(yield* a.holdBack(follower, at, false)).toBe(true)
        expect(yield* b.waitedFor(10)).toEqual([leader.id])
        // The other replica evaluates the leader: it marks it seen and takes the follower.
        yield* b.markSeen(leader.id, at)
        expect(yield* a.hasBeenSeen(leader.id)).toBe(true)
        const released = yield* b.releaseFollowers(leader.id)
        expect(released.map((e) => e.id)).toEqual([follower.id])
        expect(released[0]!.occurred).toBeInstanceOf(Date)
        expect(yield* a.releaseFollowers(leader.id)).toEqual([])
        // Once its leader is seen, a follower does not wait.
        expect(yield* a.holdBack({ ...event("another"), follows: leader.id }, at, false)).toBe(false)

        const orphan = { ...event("orphan"), follows: "00000000-0000-4000-b000-999999999999" }
        expect(yield* a.holdBack(orphan, at, false)).toBe(true)
        expect(yield* a.waitedFor(10)).toEqual([orphan.follows])
        expect(yield* b.lostFollowers(at)).toEqual([])
        const lost = yield* b.lostFollowers(at + PRECEDING_EVENT_LOOKBACK_MS)
        expect(lost.map((e) => e.id)).toEqual([orphan.id])
        expect(yield* a.lostFollowers(at + PRECEDING_EVENT_LOOKBACK_MS)).toEqual([])
      })
    ), 30_000)
})
