/**
 * Label patterns an attacker chooses (`*a*a*…*b`) against values that nearly match: as backtracking
 * regular expressions these took tens of seconds per 40-character id, blocking the whole process.
 * Here they answer in milliseconds, through every path that matches them: automation triggers with
 * the triggers service running, /events/filter on the database, and /events/out live filters.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Schema, TestClock } from "effect"
import { EventFilter, eventMatches, resolveFilter } from "../../src/events/filter.ts"
import { EventPersister } from "../../src/events/persister.ts"
import { EventPage } from "../../src/events/schemas.ts"
import { runBackgroundServices } from "../../src/services/registry.ts"
import { idOf, ok } from "../support/api.ts"
import { eventually } from "../support/eventually.ts"
import { timed } from "../support/timing.ts"
import { buildInServer, request, testServer } from "../support/server.ts"
import { connect, opened } from "../support/websocket.ts"

/** A 40-character id and the pattern that made a backtracking matcher try ~C(40,12) ways. */
const NEAR = "a".repeat(40)
const FULL = `${NEAR}b`
const HOSTILE = `${"*a".repeat(12)}*b`

let counter = 0
const event = (name: string, id: string) =>
  Effect.map(Clock.currentTimeMillis, (millis) => ({
    id: `00000000-0000-4000-a000-${String(++counter).padStart(12, "0")}`,
    occurred: new Date(millis - 1000).toISOString(),
    event: name,
    resource: { "prefect.resource.id": id },
    related: [{ "prefect.resource.id": id, "prefect.resource.role": "thing" }]
  }))

/** Runs `effect` while asking /health every 50 ms; answers its result and the slowest /health. */
const whileProbingHealth = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    let slowest = 0
    let done = false
    const probe = Effect.gen(function* () {
      while (!done) {
        const started = performance.now()
        expect((yield* request("GET", "/health")).status).toBe(200)
        slowest = Math.max(slowest, performance.now() - started)
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      }
    })
    const fiber = yield* Effect.fork(probe)
    const result = yield* Effect.ensuring(effect, Effect.sync(() => (done = true)))
    yield* fiber.await
    return { result, slowestHealth: slowest }
  })

const filtered = (filter: Record<string, unknown>) =>
  timed(Effect.map(request("POST", "/events/filter", { body: { filter } }), (res) => ok(res, 200).events.map((e) => e.id) as Array<string>))

describe("hostile label patterns", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("in automation triggers, /events/filter and /events/out answer in milliseconds, and /health keeps answering", () =>
      Effect.scoped(
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 24, 9, 0, 0))
          yield* buildInServer(runBackgroundServices((s) => s.name === "triggers" || s.name === "event_persister"))

          const automation = (name: string, trigger: Record<string, unknown>) =>
            Effect.map(
              request("POST", "/automations/", {
                body: { name, trigger: { posture: "Reactive", expect: ["hostile.*"], threshold: 1, within: 0, ...trigger }, actions: [{ type: "do-nothing" }] }
              }),
              (res) => idOf(ok(res, 201))
            )
          const onResource = yield* automation("resource", { match: { "prefect.resource.id": HOSTILE } })
          const onRelated = yield* automation("related", { match_related: { "prefect.resource.id": [HOSTILE, "!*"] } })
          const perResource = yield* automation("per resource", { match: { "prefect.resource.id": HOSTILE }, for_each: ["prefect.resource.id"] })

          const live = opened(yield* connect("/events/out"))
          live.send({ type: "auth", token: null })
          expect(yield* Effect.promise(() => live.next())).toEqual({ type: "auth_success" })
          live.send({ type: "filter", filter: { any_resource: { labels: { "prefect.resource.id": HOSTILE } } } })

          const near = [yield* event("hostile.near", NEAR), yield* event("hostile.near", NEAR), yield* event("hostile.near", NEAR)]
          const full = yield* event("hostile.full", FULL)
          const { result: posted, slowestHealth } = yield* whileProbingHealth(
            Effect.gen(function* () {
              const sent = yield* timed(request("POST", "/events", { body: near }))
              expect(sent.value.status).toBe(204)
              // Let the triggers service and the live stream work through them.
              yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 300)))
              expect((yield* request("POST", "/events", { body: [full] })).status).toBe(204)
              return sent.ms
            })
          )
          // A backtracking matcher took minutes here; the margin is for a machine busy with other tests.
          expect(posted).toBeLessThan(3000)
          expect(slowestHealth).toBeLessThan(1000)

          // The live stream sends the event that matches, and not the near misses.
          const streamed = yield* Effect.promise(() => live.next())
          expect(streamed).toMatchObject({ type: "event", event: { id: full.id } })
          live.close()

          // Each automation fired once, on the matching event.
          for (const id of [onResource, onRelated, perResource]) {
            const triggered = yield* eventually(
              Effect.gen(function* () {
                const res = yield* request("POST", "/events/filter", {
                  body: { filter: { resource: { id: [`prefect.automation.${id}`] }, event: { name: ["prefect.automation.triggered"] } } }
                })
                const events = ok(res, 200).events
                expect(events).toHaveLength(1)
                return events
              }),
              { nudgeClock: true }
            )
            expect(triggered[0].payload.triggering_event.id).toBe(full.id)
          }

          // The stored events, filtered on the database with the same patterns.
          const ours = { event: { prefix: ["hostile."] } }
          const byResource = yield* filtered({ ...ours, resource: { labels: { "prefect.resource.id": HOSTILE } } })
          expect(byResource.value).toEqual([full.id])
          const byRelated = yield* filtered({ ...ours, related: { labels: { "prefect.resource.id": HOSTILE, "prefect.resource.role": "thing" } } })
          expect(byRelated.value).toEqual([full.id])
          const byAny = yield* filtered({ ...ours, any_resource: { labels: { "prefect.resource.id": [HOSTILE] } } })
          expect(byAny.value).toEqual([full.id])
          const notHostile = yield* filtered({ ...ours, resource: { labels: { "prefect.resource.id": `!${HOSTILE}` } } })
          expect(notHostile.value).toHaveLength(3)
          expect(notHostile.value).not.toContain(full.id)
          for (const { ms } of [byResource, byRelated, byAny, notHostile]) expect(ms).toBeLessThan(3000)

          const health = yield* timed(request("GET", "/health"))
          expect(health.value.status).toBe(200)
          expect(health.ms).toBeLessThan(1000)
        })
      ))

    it.effect("a pattern with more `?` than matching can afford is a 422, in filters and in triggers", () =>
      Effect.gen(function* () {
        const tooMany = `prefect.flow-run.${"?".repeat(17)}`
        const filter = yield* request("POST", "/events/filter", { body: { filter: { resource: { labels: { "prefect.resource.id": tooMany } } } } })
        expect(filter.status).toBe(422)
        expect(filter.body.detail[0]).toMatchObject({
          loc: ["body", "filter", "resource", "labels", "prefect.resource.id"],
          msg: expect.stringContaining("at most 16 '?' wildcards")
        })
        const trigger = yield* request("POST", "/automations/", {
          body: { name: "x", trigger: { posture: "Reactive", expect: [`a.${"?".repeat(17)}`] }, actions: [{ type: "do-nothing" }] }
        })
        expect(trigger.status).toBe(422)
        expect(JSON.stringify(trigger.body.detail)).toContain("at most 16 '?' wildcards")
        // Sixteen are fine.
        expect((yield* request("POST", "/events/filter", { body: { filter: { resource: { labels: { "prefect.resource.id": tooMany.slice(0, -1) } } } } })).status).toBe(200)
      }))

    it.effect("a query and a live stream agree on what every pattern matches, roles and LIKE's own wildcards included", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.UTC(2026, 10, 25, 9, 0, 0))
        const at = (n: number) => Effect.map(event("agree.e", `agree.${n}`), (e) => ({ ...e, event: `agree.e${n}` }))
        const events = [
          // An own resource that names a role: stored without one, so no role pattern matches it.
          { ...(yield* at(1)), resource: { "prefect.resource.id": "agree.1", "prefect.resource.role": "x", name: "a%b" }, related: [{ "prefect.resource.id": "agree.r1", "prefect.resource.role": "flow", name: "a_b" }] },
          { ...(yield* at(2)), resource: { "prefect.resource.id": "agree.2_x", name: "axb" }, related: [] },
          { ...(yield* at(3)), resource: { "prefect.resource.id": "agree.3%", kind: "[k]" }, related: [{ "prefect.resource.id": "agree.r3", "prefect.resource.role": "tag", name: "é𝒳" }] }
        ]
        expect((yield* request("POST", "/events", { body: events })).status).toBe(204)
        yield* Effect.flatMap(EventPersister, (p) => p.drain)

        const specs: Array<Record<string, string | Array<string>>> = [
          { "prefect.resource.role": "x" },
          { "prefect.resource.role": "!x" },
          { "prefect.resource.role": "*" },
          { "prefect.resource.role": "" },
          { "prefect.resource.role": ["flow", ""] },
          { "prefect.resource.role": "!flow" },
          { "prefect.resource.role": "fl?w" },
          { name: "a%b" },
          { name: "a_b" },
          { name: "a?b" },
          { name: "!a*" },
          { name: "??" },
          { name: "é?" },
          { kind: "[k]" },
          { kind: "[?]" },
          { "prefect.resource.id": "agree.?_x" },
          { "prefect.resource.id": "agree.3%" },
          { "prefect.resource.id": "agree.*%" },
          { "prefect.resource.id": "!agree.r*" }
        ]
        const filters = specs.flatMap((labels) => [
          { resource: { labels } },
          { related: { labels } },
          { any_resource: { labels } }
        ])
        const now = new Date(yield* Clock.currentTimeMillis)
        const received = Schema.decodeUnknownSync(EventPage)(ok(yield* request("POST", "/events/filter", { body: { filter: { event: { prefix: ["agree."] } } } }), 200)).events
        expect(received).toHaveLength(3)
        let matchedSomething = 0
        for (const wire of filters) {
          const filter = { ...wire, event: { prefix: ["agree."] } }
          const queried = ok(yield* request("POST", "/events/filter", { body: { filter } }), 200).events.map((e) => e.event).sort()
          const resolved = resolveFilter(Schema.decodeUnknownSync(EventFilter)(filter), now)
          const streamed = received.filter((e) => eventMatches(resolved, e)).map((e) => e.event).sort()
          expect([wire, queried]).toEqual([wire, streamed])
          if (queried.length > 0) matchedSomething++
        }
        // Not a comparison of empty answers.
        expect(matchedSomething).toBeGreaterThan(20)
      }))
  })
})
