/** The memory broker's backlog: a full one holds publishers back while the persister takes events, rather than dropping any. */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Queue } from "effect"
import { EventBus } from "../../src/events/bus.ts"
import { layer as settingsLayer } from "../../src/settings/settings.ts"
import { numberedEvent } from "../support/events.ts"

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
})
