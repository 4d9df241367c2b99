import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { Redis } from "ioredis"
import { AutomationActions } from "../../src/automations/actions.ts"
import { TriggersEngine } from "../../src/automations/triggers.ts"
import { EventPersister } from "../../src/events/persister.ts"
import { ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"
import { eventually } from "../support/eventually.ts"

const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379/0"
const stream = `baton:test-server:${process.pid}-${Math.random().toString(36).slice(2, 8)}`

describe("a server on the redis broker", () => {
  it.layer(
    testServer({
      overrides: {
        "server.events.messaging_broker": "redis",
        "server.events.messaging_cache": "redis",
        "server.events.causal_ordering": "redis",
        "server.events.redis_url": REDIS_URL,
        "server.events.redis_stream": stream
      }
    }),
    { timeout: 60_000 }
  )((it) => {
    it.effect("stores the events it receives and runs automations on them through the Redis stream", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.UTC(2026, 10, 24, 12, 0, 0))
        ok(
          yield* request("POST", "/automations/", {
            body: { name: "via redis", trigger: { posture: "Reactive", expect: ["redis.ping"], threshold: 2, within: 60 }, actions: [{ type: "do-nothing" }] }
          }),
          201
        )
        yield* Effect.flatMap(TriggersEngine, (t) => t.drain)
        const ping = (n: number) => ({ id: `00000000-0000-4000-c000-${String(n).padStart(12, "0")}`, occurred: "2026-11-24T11:59:59Z", event: "redis.ping", resource: { "prefect.resource.id": "pinger" } })
        ok(yield* request("POST", "/events", { body: [ping(1), ping(2), ping(1)] }), 204)

        const stored = yield* eventually(
          Effect.gen(function* () {
            yield* Effect.flatMap(EventPersister, (p) => p.drain)
            yield* Effect.flatMap(TriggersEngine, (t) => t.drain)
            yield* Effect.flatMap(AutomationActions, (a) => a.drain)
            yield* Effect.flatMap(EventPersister, (p) => p.drain)
            const res = yield* request("POST", "/events/filter", {
              body: { filter: { event: { prefix: ["redis.ping", "prefect.automation.triggered"] }, occurred: { since: "2026-11-24T00:00:00Z" } } }
            })
            const events = ok(res, 200).events.map((e) => e.event).sort()
            expect(events).toEqual(["prefect.automation.triggered", "redis.ping", "redis.ping"])
            return events
          })
        )
        expect(stored).toHaveLength(3)
        const redis = new Redis(REDIS_URL)
        const groups = (yield* Effect.promise(() => redis.xinfo("GROUPS", stream))) as Array<Array<unknown>>
        yield* Effect.promise(async () => {
          await redis.del(stream)
          await redis.quit()
        })
        // The persisters read the stream as one group; the triggers and the recorder follow the event log.
        expect(groups.map((g) => g[1]).sort()).toEqual(["event-persister"])
      }))
  })
})
