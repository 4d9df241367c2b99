import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Queue } from "effect"
import { EventBus, SUBSCRIPTION_BACKLOG } from "../../src/events/bus.ts"
import type { ReceivedEvent } from "../../src/events/schemas.ts"
import { layer as settingsLayer } from "../../src/settings/settings.ts"

const event = (n: number): ReceivedEvent => ({
  id: `00000000-0000-4000-b000-${String(n).padStart(12, "0")}`,
  occurred: new Date("2026-11-24T10:00:00Z"),
  received: new Date("2026-11-24T10:00:01Z"),
  event: `backlog.${n}`,
  resource: { "prefect.resource.id": `thing.${n}` },
  related: [],
  payload: {},
  follows: null
})

describe("live subscribers of the event bus (memory broker)", () => {
  layer(EventBus.Default.pipe(Layer.provide(settingsLayer())))((it) => {
    it.scoped("keep at most SUBSCRIPTION_BACKLOG events for a subscriber that does not take them, the newest", () =>
      Effect.gen(function* () {
        const bus = yield* EventBus
        const slow = yield* bus.subscribe
        const published = 4 * SUBSCRIPTION_BACKLOG
        for (let n = 0; n < published; n += 100) {
          yield* bus.publish(Array.from({ length: Math.min(100, published - n) }, (_, i) => event(n + i)))
        }
        expect(yield* Queue.size(slow)).toBe(SUBSCRIPTION_BACKLOG)
        const kept = yield* Queue.takeAll(slow)
        expect([...kept].map((e) => e.event)).toEqual(
          Array.from({ length: SUBSCRIPTION_BACKLOG }, (_, i) => `backlog.${published - SUBSCRIPTION_BACKLOG + i}`)
        )
        // A subscriber that keeps up loses nothing to the slow one.
        const fast = yield* bus.subscribe
        for (let n = 0; n < published; n++) {
          yield* bus.publish([event(published + n)])
          expect((yield* Queue.take(fast)).event).toBe(`backlog.${published + n}`)
        }
        expect(yield* Queue.size(slow)).toBe(SUBSCRIPTION_BACKLOG)
      })
    )
  })
})
