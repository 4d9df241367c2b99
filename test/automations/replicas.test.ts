import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema, TestClock } from "effect"
import { AutomationActions } from "../../src/automations/actions.ts"
import { AUTOMATION_CHANGES_CHANNEL } from "../../src/automations/changes.ts"
import { AutomationsRepo } from "../../src/automations/repo.ts"
import { AutomationCreate } from "../../src/automations/schemas.ts"
import { settleTrigger } from "../../src/automations/service.ts"
import { TriggersEngine } from "../../src/automations/triggers.ts"
import { EventPersister } from "../../src/events/persister.ts"
import { runBackgroundServices } from "../../src/services/registry.ts"
import { ok } from "../support/api.ts"
import { buildInServer, request, testServer } from "../support/server.ts"

const decodeCreate = Schema.decodeUnknownSync(AutomationCreate)

describe("automation changes made by another replica", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    // Replicas share a PostgreSQL server; the embedded database serves one process.
    it.effect.skipIf(!process.env.TEST_DATABASE_URL)("reach the triggers service through PostgreSQL LISTEN/NOTIFY", () =>
      Effect.scoped(
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 24, 11, 0, 0))
          const engine = yield* TriggersEngine
          // The triggers service has loaded the automations (none of this one yet)…
          yield* engine.drain
          yield* buildInServer(runBackgroundServices((s) => s.name === "triggers" && s.loop === "automation changes"))
          yield* TestClock.adjust(Duration.millis(1))
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 300)))

          // …when another replica stores one and announces it (this process hears only the NOTIFY).
          const body = decodeCreate({ name: "elsewhere", trigger: { posture: "Reactive", expect: ["far.away"], within: 0 }, actions: [{ type: "do-nothing" }] })
          const stored = yield* (yield* AutomationsRepo).create({ ...body, trigger: settleTrigger(body.trigger, () => crypto.randomUUID()) })
          yield* (yield* AutomationsRepo).notify(AUTOMATION_CHANGES_CHANNEL, JSON.stringify({ automation_id: stored.id, event_type: "created" }))

          const triggered = Effect.gen(function* () {
            yield* TestClock.adjust(Duration.millis(1))
            ok(yield* request("POST", "/events", {
              body: [{ id: crypto.randomUUID(), occurred: new Date(Date.UTC(2026, 10, 24, 11, 0, 0)).toISOString(), event: "far.away", resource: { "prefect.resource.id": "far" } }]
            }), 204)
            yield* Effect.flatMap(EventPersister, (p) => p.drain)
            yield* engine.drain
            yield* Effect.flatMap(AutomationActions, (a) => a.drain)
            yield* Effect.flatMap(EventPersister, (p) => p.drain)
            const res = yield* request("POST", "/events/filter", {
              body: { filter: { event: { name: ["prefect.automation.triggered"] }, resource: { id: [`prefect.automation.${stored.id}`] }, occurred: { since: "2026-01-01T00:00:00Z" } } }
            })
            return ok(res, 200).events.length as number
          })
          let fired = 0
          for (let attempt = 0; attempt < 40 && fired === 0; attempt++) {
            fired = yield* triggered
            if (fired === 0) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
          }
          expect(fired).toBeGreaterThan(0)
        })
      ))
  })
})
