/** The memory broker's backlog: a full one holds publishers back while the persister takes events, rather than dropping any. */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Layer, Queue } from "effect"
import { EventBus } from "../../src/events/bus.ts"
import { Metrics } from "../../src/http/metrics-registry.ts"
import { layer as settingsLayer } from "../../src/settings/settings.ts"
import { numberedEvent } from "../support/events.ts"
import { parseExposition } from "../support/metrics.ts"

const event = (n: number) => numberedEvent("room", n)

const realMillis = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

describe("the event bus backlog (memory broker)", () => {
  it.live("holds a publisher back while it is full and the persister takes events; none is dropped", () =>
    Effect.gen(function* () {
      const bus = yield* EventBus
      const { events } = yield* bus.consume("persister")
      yield* bus.publish(Array.from({ length: 10 }, (_, i) => event(i)))
      const more = yield* Effect.fork(bus.publish(Array.from({ length: 5 }, (_, i) => event(10 + i))))
      yield* realMillis(300)
      // Full: the five wait.
      expect(yield* Fiber.poll(more)).toEqual(expect.objectContaining({ _tag: "None" }))
      const first = yield* Queue.takeN(events, 5)
      yield* Fiber.join(more).pipe(Effect.timeout("2 seconds"))
      const rest = yield* Queue.takeAll(events)
      expect([...Chunk.toReadonlyArray(first), ...Chunk.toReadonlyArray(rest)].map((e) => e.event)).toEqual(
        Array.from({ length: 15 }, (_, i) => `room.${i}`)
      )
    }).pipe(
      Effect.scoped,
      Effect.provide(EventBus.Default),
      Effect.provide(settingsLayer({ "server.services.event_persister.queue_max_size": 10 }))
    ), 20_000)

  it.live("drops the oldest after 5 s in which the persister took nothing, and counts them in baton_events_dropped_total", () =>
    Effect.gen(function* () {
      const bus = yield* EventBus
      const metrics = yield* Metrics
      const dropped = Effect.map(metrics.render, (exposition) => parseExposition(exposition.body).value("baton_events_dropped_total"))
      const { events } = yield* bus.consume("persister")
      yield* bus.publish(Array.from({ length: 10 }, (_, i) => event(i)))
      expect(yield* dropped).toBe(0)
      // Full, and nothing taken: after 5 s the five push the five oldest out.
      const started = Date.now()
      yield* bus.publish(Array.from({ length: 5 }, (_, i) => event(10 + i)))
      expect(Date.now() - started).toBeGreaterThanOrEqual(4_900)
      expect(yield* dropped).toBe(5)
      const kept = yield* Queue.takeAll(events)
      expect(Chunk.toReadonlyArray(kept).map((e) => e.event)).toEqual(Array.from({ length: 10 }, (_, i) => `room.${5 + i}`))
      // Room again: nothing more dropped.
      yield* bus.publish([event(15)])
      expect(yield* dropped).toBe(5)
    }).pipe(
      Effect.scoped,
      // The bus with the Metrics it reports into, for the test to read.
      Effect.provide(EventBus.DefaultWithoutDependencies.pipe(Layer.provideMerge(Metrics.Default))),
      Effect.provide(settingsLayer({ "server.services.event_persister.queue_max_size": 10, "server.metrics_enabled": true }))
    ), 20_000)
})
