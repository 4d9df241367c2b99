import { describe, expect, layer } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"
const RUN_A = "11111111-1111-4111-8111-111111111111"
const RUN_B = "22222222-2222-4222-8222-222222222222"

const makeLimit = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/v2/concurrency_limits/", { body }), (res) => ok(res, 201))
const readLimit = (idOrName: string) => Effect.map(request("GET", `/v2/concurrency_limits/${idOrName}`), (res) => ok(res, 200))
const increment = (body: Record<string, unknown>) => request("POST", "/v2/concurrency_limits/increment", { body })

describe("global concurrency limits", () => {
  layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("creates (201), reads by id or name, filters by name, PATCHes and deletes", () =>
      Effect.gen(function* () {
        const limit = yield* makeLimit({ name: "g-limiter", limit: 42 })
        expect(limit).toMatchObject({
          name: "g-limiter",
          limit: 42,
          active: true,
          active_slots: 0,
          denied_slots: 0,
          slot_decay_per_second: 0,
          avg_slot_occupancy_seconds: 2
        })
        const read = yield* readLimit(limit.id)
        expect(read).toEqual({
          id: limit.id,
          created: limit.created,
          updated: limit.updated,
          active: true,
          name: "g-limiter",
          limit: 42,
          active_slots: 0,
          slot_decay_per_second: 0
        })
        expect((yield* readLimit("g-limiter")).id).toBe(limit.id)
        expect((yield* request("GET", `/v2/concurrency_limits/${MISSING}`)).body).toEqual({ detail: "Concurrency Limit not found" })
        expect((yield* request("POST", "/v2/concurrency_limits/", { body: { name: "g-limiter", limit: 1 } })).status).toBe(409)
        for (const body of [{ name: "a/b", limit: 1 }, { name: "x", limit: -1 }, { name: "x", limit: 1, slot_decay_per_second: -1 }, { name: "x", limit: 1, slot_decay_per_second: 1e298 }, { name: "x", limit: 1, avg_slot_occupancy_seconds: 3 }]) {
          expect((yield* request("POST", "/v2/concurrency_limits/", { body })).status, JSON.stringify(body)).toBe(422)
        }
        yield* makeLimit({ name: "g-another", limit: 1 })
        const names = ok(yield* request("POST", "/v2/concurrency_limits/filter", { body: {} }), 200).map((l: any) => l.name)
        expect(names).toEqual([...names].sort())
        expect(names).toEqual(expect.arrayContaining(["g-another", "g-limiter"]))
        // A decay rate whose product with the seconds since the last change could overflow is refused.
        const fast = yield* request("PATCH", `/v2/concurrency_limits/${limit.id}`, { body: { slot_decay_per_second: 1e298 } })
        expect(fast.status).toBe(422)
        expect(fast.body.detail[0]).toMatchObject({ loc: ["body", "slot_decay_per_second"], type: "less_than_equal" })
        expect((yield* request("PATCH", `/v2/concurrency_limits/${limit.id}`, { body: { name: "g-renamed", limit: 5 } })).status).toBe(204)
        expect(yield* readLimit("g-renamed")).toMatchObject({ id: limit.id, limit: 5 })
        expect((yield* request("PATCH", "/v2/concurrency_limits/g-renamed", { body: { name: "g-another" } })).status).toBe(409)
        expect((yield* request("PATCH", "/v2/concurrency_limits/g-renamed", { body: { limit: null } })).status).toBe(422)
        expect((yield* request("PATCH", `/v2/concurrency_limits/${MISSING}`, { body: {} })).status).toBe(404)
        expect((yield* request("DELETE", "/v2/concurrency_limits/g-renamed")).status).toBe(204)
        expect((yield* request("DELETE", "/v2/concurrency_limits/g-renamed")).status).toBe(404)
      })
    )

    it.effect("increments all the named limits or none; full ones answer 423 with Retry-After", () =>
      Effect.gen(function* () {
        const a = yield* makeLimit({ name: "inc-a", limit: 10 })
        const b = yield* makeLimit({ name: "inc-b", limit: 10 })
        const off = yield* makeLimit({ name: "inc-off", limit: 10, active: false })
        const res = yield* increment({ slots: 1, names: ["inc-a", "inc-b", "inc-off", "unknown"] })
        expect(res.status).toBe(200)
        expect(res.body.map((l: any) => l.id).sort()).toEqual([a.id, b.id, off.id].sort())
        expect([(yield* readLimit(a.id)).active_slots, (yield* readLimit(b.id)).active_slots, (yield* readLimit(off.id)).active_slots]).toEqual([1, 1, 0])
        expect((yield* increment({ slots: 1, names: ["unknown"] })).body).toEqual([])
        expect((yield* increment({ slots: 0, names: ["inc-a"] })).status).toBe(422)
        const tooMany = yield* increment({ slots: 11, names: ["inc-a"] })
        expect(tooMany.status).toBe(422)
        expect(tooMany.body).toEqual({ detail: "Slots requested is greater than the limit" })

        yield* makeLimit({ name: "inc-full", limit: 10, active_slots: 10 })
        const refused = yield* increment({ slots: 1, names: ["inc-a", "inc-full"] })
        expect(refused.status).toBe(423)
        expect(refused.body).toEqual({ detail: "Locked" })
        // Denied 0 → 1 slot against a limit of 10 at 2 s average occupancy: about 0.2 s.
        const retry = Number(refused.headers.get("retry-after"))
        expect(retry).toBeGreaterThan(0.1)
        expect(retry).toBeLessThan(0.3)
        // Nothing was taken on the limit that had room.
        expect((yield* readLimit(a.id)).active_slots).toBe(1)

        const rateless = yield* increment({ slots: 1, names: ["inc-a"], mode: "rate_limit" })
        expect(rateless.status).toBe(422)
        expect(rateless.body.detail).toBe(
          "Only concurrency limits with slot decay can be used for rate limiting. The following limits do not have a decay configured: 'inc-a'"
        )
        yield* makeLimit({ name: "inc-rate", limit: 5, slot_decay_per_second: 1 })
        expect((yield* increment({ slots: 1, names: ["inc-rate"], mode: "rate_limit" })).status).toBe(200)
      })
    )

    it.effect("slots of a rate limit decay with time, and a Retry-After follows the decay", () =>
      Effect.gen(function* () {
        const decaying = yield* makeLimit({ name: "decay", limit: 10, active_slots: 10, slot_decay_per_second: 0.1 })
        yield* TestClock.adjust(Duration.millis(30_500))
        expect((yield* readLimit(decaying.id)).active_slots).toBe(7)
        expect(ok(yield* request("POST", "/v2/concurrency_limits/filter", { body: {} }), 200).find((l: any) => l.name === "decay").active_slots).toBe(7)

        const fast = yield* makeLimit({ name: "fast", limit: 10, slot_decay_per_second: 5 })
        expect((yield* increment({ slots: 10, names: ["fast"] })).status).toBe(200)
        const refused = yield* increment({ slots: 5, names: ["fast"] })
        expect(refused.status).toBe(423)
        // One slot per 0.2 s, 5 + 0 denied slots ahead: about 1 s.
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0.7)
        expect(Number(refused.headers.get("retry-after"))).toBeLessThan(1.35)
        yield* TestClock.adjust(Duration.seconds(2))
        expect((yield* increment({ slots: 5, names: ["fast"] })).status).toBe(200)
        // The first ten decayed away in those two seconds.
        expect((yield* readLimit(fast.id)).active_slots).toBe(5)
      })
    )

    it.effect("decrements (never below 0), and leases hold and give back slots", () =>
      Effect.gen(function* () {
        const empty = yield* makeLimit({ name: "dec-empty", limit: 10 })
        const full = yield* makeLimit({ name: "dec-full", limit: 10, active_slots: 10 })
        const res = ok(yield* request("POST", "/v2/concurrency_limits/decrement", { body: { slots: 1, names: ["dec-empty", "dec-full"] } }), 200)
        expect(res.map((l: any) => l.id).sort()).toEqual([empty.id, full.id].sort())
        expect([(yield* readLimit(empty.id)).active_slots, (yield* readLimit(full.id)).active_slots]).toEqual([0, 9])

        const leased = yield* makeLimit({ name: "leased", limit: 10 })
        const withLease = ok(yield* request("POST", "/v2/concurrency_limits/increment-with-lease", {
          body: { slots: 2, names: ["leased"], lease_duration: 60, holder: { type: "flow_run", id: RUN_A } }
        }), 200)
        expect(withLease).toEqual({ lease_id: expect.any(String), limits: [{ id: leased.id, name: "leased", limit: 10 }] })
        expect((yield* readLimit(leased.id)).active_slots).toBe(2)
        for (const body of [
          { slots: 1, names: ["leased"], lease_duration: 59 },
          { slots: 1, names: ["leased"], lease_duration: 2_592_000 },
          { slots: 1, names: ["leased"], holder: { type: "robot", id: RUN_A } },
          { slots: 1, names: ["leased"], holder: { type: "task_run" } },
          { slots: 1, names: ["leased"], holder: { type: "task_run", id: RUN_A, extra: 1 } }
        ]) {
          expect((yield* request("POST", "/v2/concurrency_limits/increment-with-lease", { body })).status, JSON.stringify(body)).toBe(422)
        }
        expect((yield* request("POST", `/v2/concurrency_limits/leases/${withLease.lease_id}/renew`, { body: { lease_duration: 600 } })).status).toBe(204)
        const gone = yield* request("POST", `/v2/concurrency_limits/leases/${MISSING}/renew`, { body: {} })
        expect(gone.status).toBe(410)
        expect(gone.body).toEqual({ detail: "Lease not found - it may have expired or been revoked" })
        expect((yield* request("POST", "/v2/concurrency_limits/decrement-with-lease", { body: { lease_id: withLease.lease_id } })).status).toBe(204)
        expect((yield* readLimit(leased.id)).active_slots).toBe(0)
        // A lease given back twice gives back nothing more.
        expect((yield* request("POST", "/v2/concurrency_limits/decrement-with-lease", { body: { lease_id: withLease.lease_id } })).status).toBe(204)
        expect((yield* readLimit(leased.id)).active_slots).toBe(0)
      })
    )

    it.effect("50 concurrent increments on a limit of 10 admit exactly 10", () =>
      Effect.gen(function* () {
        const limit = yield* makeLimit({ name: "race", limit: 10 })
        const answers = yield* Effect.all(
          Array.from({ length: 50 }, () => increment({ slots: 1, names: ["race"] })),
          { concurrency: "unbounded" }
        )
        expect(answers.filter((a) => a.status === 200)).toHaveLength(10)
        expect(answers.filter((a) => a.status === 423)).toHaveLength(40)
        expect((yield* readLimit(limit.id)).active_slots).toBe(10)
      })
    )
  })
})

describe("tag concurrency limits", () => {
  layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("create or update by tag (201, then 200), read by id and tag, filter, delete", () =>
      Effect.gen(function* () {
        const created = yield* request("POST", "/concurrency_limits/", { body: { tag: "db", concurrency_limit: 42 } })
        expect(created.status).toBe(201)
        expect(created.body).toMatchObject({ tag: "db", concurrency_limit: 42, active_slots: [] })
        yield* TestClock.adjust(Duration.seconds(1))
        const updated = yield* request("POST", "/concurrency_limits/", { body: { tag: "db", concurrency_limit: 4242 } })
        expect(updated.status).toBe(200)
        expect(updated.body).toMatchObject({ id: created.body.id, concurrency_limit: 4242 })
        expect(new Date(updated.body.updated).getTime()).toBeGreaterThan(new Date(created.body.updated).getTime())
        // It is the global limit "tag:db".
        expect((yield* readLimit("tag:db")).limit).toBe(4242)
        expect(ok(yield* request("GET", `/concurrency_limits/${created.body.id}`), 200).tag).toBe("db")
        expect(ok(yield* request("GET", "/concurrency_limits/tag/db"), 200).id).toBe(created.body.id)
        expect((yield* request("GET", "/concurrency_limits/tag/nope")).body).toEqual({ detail: "Concurrency limit not found" })
        const global = yield* makeLimit({ name: "not-a-tag", limit: 1 })
        expect((yield* request("GET", `/concurrency_limits/${global.id}`)).status).toBe(404)
        yield* request("POST", "/concurrency_limits/", { body: { tag: "api", concurrency_limit: 1 } })
        const listed = ok(yield* request("POST", "/concurrency_limits/filter", { body: {} }), 200).map((l: any) => l.tag)
        expect(listed).toEqual(["api", "db"])
        expect((yield* request("DELETE", "/concurrency_limits/tag/api")).body).toBeNull()
        expect((yield* request("DELETE", "/concurrency_limits/tag/api")).status).toBe(404)
        expect((yield* request("DELETE", `/concurrency_limits/${created.body.id}`)).status).toBe(200)
        expect((yield* request("DELETE", `/concurrency_limits/${MISSING}`)).status).toBe(404)
      })
    )

    it.effect("task runs take and give back tag slots; full and zero limits answer 423", () =>
      Effect.gen(function* () {
        yield* request("POST", "/concurrency_limits/", { body: { tag: "t1", concurrency_limit: 2 } })
        yield* request("POST", "/concurrency_limits/", { body: { tag: "t2", concurrency_limit: 2 } })
        const taken = ok(yield* request("POST", "/concurrency_limits/increment", { body: { names: ["t1", "t2", "none"], task_run_id: RUN_A } }), 200)
        expect(taken.map((l: any) => l.name)).toEqual(["t1", "t2"])
        const slotsOf = (tag: string) => Effect.map(request("GET", `/concurrency_limits/tag/${tag}`), (res) => ok(res, 200).active_slots)
        expect(yield* slotsOf("t1")).toEqual([RUN_A])
        expect(yield* slotsOf("t2")).toEqual([RUN_A])
        const given = ok(yield* request("POST", "/concurrency_limits/decrement", { body: { names: ["t1", "t2"], task_run_id: RUN_A } }), 200)
        expect(given.map((l: any) => l.name)).toEqual(["tag:t1", "tag:t2"])
        expect(yield* slotsOf("t1")).toEqual([])
        expect((yield* readLimit("tag:t1")).active_slots).toBe(0)

        yield* request("POST", "/concurrency_limits/increment", { body: { names: ["t1"], task_run_id: RUN_B } })
        yield* request("POST", "/concurrency_limits/increment", { body: { names: ["t1"], task_run_id: RUN_B } })
        const full = yield* request("POST", "/concurrency_limits/increment", { body: { names: ["t1", "t2"], task_run_id: RUN_A } })
        expect(full.status).toBe(423)
        expect(full.body.detail).toContain("Concurrency limit for the t1 tag has been reached")
        expect(Number(full.headers.get("retry-after"))).toBe(30)
        expect(yield* slotsOf("t2")).toEqual([])

        yield* request("POST", "/concurrency_limits/", { body: { tag: "zero", concurrency_limit: 0 } })
        const zero = yield* request("POST", "/concurrency_limits/increment", { body: { names: ["t2", "zero"], task_run_id: RUN_A } })
        expect(zero.status).toBe(423)
        expect(zero.headers.get("retry-after")).toBeNull()
        expect(zero.body).toEqual({ detail: 'The concurrency limit on tag "zero" is 0 and will deadlock if the task tries to run again.' })

        // Reset: exactly the given task runs hold slots.
        const holders = [RUN_A, "33333333-3333-4333-8333-333333333333"]
        expect((yield* request("POST", "/concurrency_limits/tag/t1/reset", { body: { slot_override: holders } })).body).toBeNull()
        expect([...(yield* slotsOf("t1"))].sort()).toEqual([...holders].sort())
        expect((yield* readLimit("tag:t1")).active_slots).toBe(2)
        yield* request("POST", "/concurrency_limits/tag/t1/reset", { body: {} })
        expect(yield* slotsOf("t1")).toEqual([])
        expect((yield* readLimit("tag:t1")).active_slots).toBe(0)
        expect((yield* request("POST", "/concurrency_limits/tag/none/reset", { body: {} })).status).toBe(404)
      })
    )
  })
})
