import { describe, expect, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { EventLog, SUBSCRIPTION_BACKLOG } from "../../src/events/log.ts"
import { testServer } from "../support/server.ts"
import { numberedEvent } from "../support/events.ts"

const event = (n: number) => numberedEvent("backlog", n)

describe("live subscribers of the event log", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.scoped("keep at most SUBSCRIPTION_BACKLOG events for a subscriber that does not take them, the newest; one that keeps up loses nothing", () =>
      Effect.gen(function* () {
        const log = yield* EventLog
        const slow = yield* log.subscribe
        const fast = yield* log.subscribe
        const published = 4 * SUBSCRIPTION_BACKLOG
        const seen: Array<string> = []
        for (let n = 0; n < published; n += 100) {
          yield* log.write(Array.from({ length: Math.min(100, published - n) }, (_, i) => event(n + i)))
          while (seen.length < Math.min(n + 100, published)) seen.push((yield* Queue.take(fast)).event)
        }
        expect(seen).toEqual(Array.from({ length: published }, (_, i) => `backlog.${i}`))
        expect(yield* Queue.size(slow)).toBe(SUBSCRIPTION_BACKLOG)
        const kept = yield* Queue.takeAll(slow)
        expect([...kept].map((e) => e.event)).toEqual(
          Array.from({ length: SUBSCRIPTION_BACKLOG }, (_, i) => `backlog.${published - SUBSCRIPTION_BACKLOG + i}`)
        )
      })
    )
  })
})
