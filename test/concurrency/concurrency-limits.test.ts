import { describe, expect, layer } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { ConcurrencyLimitV2 } from "../../src/concurrency/schemas.ts"
import { ok, okAs, once } from "../support/api.ts"
import { clientOf, request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"
const RUN_A = "11111111-1111-4111-8111-111111111111"
const RUN_B = "22222222-2222-4222-8222-222222222222"

const makeLimit = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/v2/concurrency_limits/", { body }), (res) => okAs(ConcurrencyLimitV2, res, 201))
const readLimit = (idOrName: string) =>
  Effect.flatMap(clientOf("concurrencyLimitsV2"), (limits) => limits.read({ path: { id_or_name: idOrName } }))
const slotsOfLimit = (idOrName: string) => Effect.map(readLimit(idOrName), (limit) => limit.active_slots)
const increment = (body: Record<string, unknown>) => request("POST", "/v2/concurrency_limits/increment", { body })
const withLease = (body: Record<string, unknown>) => request("POST", "/v2/concurrency_limits/increment-with-lease", { body })
const decrementWithLease = (leaseId: string) => request("POST", "/v2/concurrency_limits/decrement-with-lease", { body: { lease_id: leaseId } })

/** Limits <prefix>-a and <prefix>-b of 10, and <prefix>-off of 10, inactive. */
const threeLimits = (prefix: string) =>
  Effect.all({
    a: makeLimit({ name: `${prefix}-a`, limit: 10 }),
    b: makeLimit({ name: `${prefix}-b`, limit: 10 }),
    off: makeLimit({ name: `${prefix}-off`, limit: 10, active: false })
  })

/** A limit of 10 and a lease of 2 of its slots for a flow run: the limit and the lease's answer. */
const leased = (name: string) =>
  Effect.gen(function* () {
    const limit = yield* makeLimit({ name, limit: 10 })
    const lease = ok(yield* withLease({ slots: 2, names: [name], lease_duration: 60, holder: { type: "flow_run", id: RUN_A } }), 200)
    return { limit, leaseId: lease.lease_id as string, lease }
  })

describe("global concurrency limits", () => {
  layer(testServer(), { timeout: 60_000 })((it) => {
    describe("create, read, filter, PATCH and delete", () => {
      it.effect("creates a limit (201) with the reference's defaults", () =>
        Effect.gen(function* () {
          const limit = ok(yield* request("POST", "/v2/concurrency_limits/", { body: { name: "g-limiter", limit: 42 } }), 201)
          expect(limit).toMatchObject({ name: "g-limiter", limit: 42, active: true, active_slots: 0, denied_slots: 0, slot_decay_per_second: 0, avg_slot_occupancy_seconds: 2 })
        }))

      it.effect("reads a limit by id, with the reference's fields, or by name", () =>
        Effect.gen(function* () {
          const limit = yield* makeLimit({ name: "g-read", limit: 42 })
          const read = yield* request("GET", `/v2/concurrency_limits/${limit.id}`)
          expect(read.body).toEqual({
            id: limit.id,
            created: limit.created,
            updated: limit.updated,
            active: true,
            name: "g-read",
            limit: 42,
            active_slots: 0,
            slot_decay_per_second: 0
          })
          expect((yield* readLimit("g-read")).id).toBe(limit.id)
        }))

      it.effect("reads an unknown limit as 404", () =>
        Effect.gen(function* () {
          expect((yield* request("GET", `/v2/concurrency_limits/${MISSING}`)).body).toEqual({ detail: "Concurrency Limit not found" })
        }))

      it.effect("refuses a name another limit has (409)", () =>
        Effect.gen(function* () {
          yield* makeLimit({ name: "g-taken", limit: 42 })
          expect((yield* request("POST", "/v2/concurrency_limits/", { body: { name: "g-taken", limit: 1 } })).status).toBe(409)
        }))

      const refused = [
        { name: "a/b", limit: 1 },
        { name: "x", limit: -1 },
        { name: "x", limit: 1, slot_decay_per_second: -1 },
        { name: "x", limit: 1, slot_decay_per_second: 1e298 },
        { name: "x", limit: 1, avg_slot_occupancy_seconds: 3 }
      ]
      for (const body of refused) {
        it.effect(`refuses ${JSON.stringify(body)} (422)`, () =>
          Effect.map(request("POST", "/v2/concurrency_limits/", { body }), (res) => expect(res.status).toBe(422)))
      }

      it.effect("filters them sorted by name", () =>
        Effect.gen(function* () {
          yield* makeLimit({ name: "g-zebra", limit: 1 })
          yield* makeLimit({ name: "g-another", limit: 1 })
          const names = ok(yield* request("POST", "/v2/concurrency_limits/filter", { body: {} }), 200).map((l) => l.name)
          expect(names).toEqual([...names].sort())
          expect(names).toEqual(expect.arrayContaining(["g-another", "g-zebra"]))
        }))

      it.effect("PATCH refuses a decay rate whose product with the seconds since the last change could overflow", () =>
        Effect.gen(function* () {
          const limit = yield* makeLimit({ name: "g-patch-fast", limit: 42 })
          const fast = yield* request("PATCH", `/v2/concurrency_limits/${limit.id}`, { body: { slot_decay_per_second: 1e298 } })
          expect(fast.status).toBe(422)
          expect(fast.body.detail[0]).toMatchObject({ loc: ["body", "slot_decay_per_second"], type: "less_than_equal" })
        }))

      it.effect("PATCH renames a limit and changes its size (204)", () =>
        Effect.gen(function* () {
          const limit = yield* makeLimit({ name: "g-patched", limit: 42 })
          expect((yield* request("PATCH", `/v2/concurrency_limits/${limit.id}`, { body: { name: "g-renamed", limit: 5 } })).status).toBe(204)
          expect(yield* readLimit("g-renamed")).toMatchObject({ id: limit.id, limit: 5 })
        }))

      it.effect("PATCH refuses a name taken (409) and a null limit (422); an unknown limit is 404", () =>
        Effect.gen(function* () {
          yield* makeLimit({ name: "g-patch-refused", limit: 42 })
          yield* makeLimit({ name: "g-patch-other", limit: 1 })
          expect((yield* request("PATCH", "/v2/concurrency_limits/g-patch-refused", { body: { name: "g-patch-other" } })).status).toBe(409)
          expect((yield* request("PATCH", "/v2/concurrency_limits/g-patch-refused", { body: { limit: null } })).status).toBe(422)
          expect((yield* request("PATCH", `/v2/concurrency_limits/${MISSING}`, { body: {} })).status).toBe(404)
        }))

      it.effect("deletes a limit by name (204); once it is gone, 404", () =>
        Effect.gen(function* () {
          yield* makeLimit({ name: "g-deleted", limit: 42 })
          expect((yield* request("DELETE", "/v2/concurrency_limits/g-deleted")).status).toBe(204)
          expect((yield* request("DELETE", "/v2/concurrency_limits/g-deleted")).status).toBe(404)
        }))
    })

    describe("increment", () => {
      it.effect("takes a slot of every named limit that is active, answering the limits it names; unknown names are skipped", () =>
        Effect.gen(function* () {
          const { a, b, off } = yield* threeLimits("inc")
          const res = yield* increment({ slots: 1, names: ["inc-a", "inc-b", "inc-off", "unknown"] })
          expect(res.status).toBe(200)
          expect(res.body.map((l) => l.id).sort()).toEqual([a.id, b.id, off.id].sort())
          expect([yield* slotsOfLimit(a.id), yield* slotsOfLimit(b.id), yield* slotsOfLimit(off.id)]).toEqual([1, 1, 0])
          expect((yield* increment({ slots: 1, names: ["unknown"] })).body).toEqual([])
        }))

      it.effect("refuses 0 slots and more slots than the limit (422)", () =>
        Effect.gen(function* () {
          yield* makeLimit({ name: "inc-sized", limit: 10 })
          expect((yield* increment({ slots: 0, names: ["inc-sized"] })).status).toBe(422)
          const tooMany = yield* increment({ slots: 11, names: ["inc-sized"] })
          expect(tooMany.status).toBe(422)
          expect(tooMany.body).toEqual({ detail: "Slots requested is greater than the limit" })
        }))

      it.effect("takes all the named limits or none: a full one answers 423 Locked with Retry-After", () =>
        Effect.gen(function* () {
          const roomy = yield* makeLimit({ name: "inc-roomy", limit: 10 })
          yield* makeLimit({ name: "inc-full", limit: 10, active_slots: 10 })
          const refused = yield* increment({ slots: 1, names: ["inc-roomy", "inc-full"] })
          expect(refused.status).toBe(423)
          expect(refused.body).toEqual({ detail: "Locked" })
          // Denied 0 → 1 slot against a limit of 10 at 2 s average occupancy: about 0.2 s.
          const retry = Number(refused.headers.get("retry-after"))
          expect(retry).toBeGreaterThan(0.1)
          expect(retry).toBeLessThan(0.3)
          // Nothing was taken on the limit that had room.
          expect(yield* slotsOfLimit(roomy.id)).toBe(0)
        }))

      it.effect("rate_limit mode takes only limits with slot decay", () =>
        Effect.gen(function* () {
          yield* makeLimit({ name: "inc-rateless", limit: 10 })
          const rateless = yield* increment({ slots: 1, names: ["inc-rateless"], mode: "rate_limit" })
          expect(rateless.status).toBe(422)
          expect(rateless.body.detail).toBe(
            "Only concurrency limits with slot decay can be used for rate limiting. The following limits do not have a decay configured: 'inc-rateless'"
          )
          yield* makeLimit({ name: "inc-rate", limit: 5, slot_decay_per_second: 1 })
          expect((yield* increment({ slots: 1, names: ["inc-rate"], mode: "rate_limit" })).status).toBe(200)
        }))

      it.effect("50 at once on a limit of 10 admit exactly 10", () =>
        Effect.gen(function* () {
          const limit = yield* makeLimit({ name: "race", limit: 10 })
          const answers = yield* Effect.all(Array.from({ length: 50 }, () => increment({ slots: 1, names: ["race"] })), { concurrency: "unbounded" })
          expect(answers.filter((a) => a.status === 200)).toHaveLength(10)
          expect(answers.filter((a) => a.status === 423)).toHaveLength(40)
          expect(yield* slotsOfLimit(limit.id)).toBe(10)
        }))
    })

    describe("slot decay", () => {
      it.effect("the slots of a rate limit decay with time, as read and as filtered", () =>
        Effect.gen(function* () {
          const decaying = yield* makeLimit({ name: "decay", limit: 10, active_slots: 10, slot_decay_per_second: 0.1 })
          yield* TestClock.adjust(Duration.millis(30_500))
          expect(yield* slotsOfLimit(decaying.id)).toBe(7)
          expect(ok(yield* request("POST", "/v2/concurrency_limits/filter", { body: {} }), 200).find((l) => l.name === "decay")!.active_slots).toBe(7)
        }))

      it.effect("a Retry-After follows the decay, and the decayed slots are free again", () =>
        Effect.gen(function* () {
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
          expect(yield* slotsOfLimit(fast.id)).toBe(5)
        }))
    })

    describe("decrement and leases", () => {
      it.effect("decrement gives back slots, never below 0", () =>
        Effect.gen(function* () {
          const empty = yield* makeLimit({ name: "dec-empty", limit: 10 })
          const full = yield* makeLimit({ name: "dec-full", limit: 10, active_slots: 10 })
          const res = ok(yield* request("POST", "/v2/concurrency_limits/decrement", { body: { slots: 1, names: ["dec-empty", "dec-full"] } }), 200)
          expect(res.map((l) => l.id).sort()).toEqual([empty.id, full.id].sort())
          expect([yield* slotsOfLimit(empty.id), yield* slotsOfLimit(full.id)]).toEqual([0, 9])
        }))

      it.effect("increment-with-lease takes the slots and answers the lease and the limits", () =>
        Effect.gen(function* () {
          const { limit, lease } = yield* leased("leased")
          expect(lease).toEqual({ lease_id: expect.any(String), limits: [{ id: limit.id, name: "leased", limit: 10 }] })
          expect(yield* slotsOfLimit(limit.id)).toBe(2)
        }))

      const refusedLeases = [
        { lease_duration: 59 },
        { lease_duration: 2_592_000 },
        { holder: { type: "robot", id: RUN_A } },
        { holder: { type: "task_run" } },
        { holder: { type: "task_run", id: RUN_A, extra: 1 } }
      ]
      const refusing = once(makeLimit({ name: "lease-refused", limit: 10 }))
      for (const body of refusedLeases) {
        it.effect(`increment-with-lease refuses ${JSON.stringify(body)} (422)`, () =>
          Effect.gen(function* () {
            yield* refusing
            expect((yield* withLease({ slots: 1, names: ["lease-refused"], ...body })).status).toBe(422)
          }))
      }

      it.effect("a lease is renewed (204); an unknown one is gone (410)", () =>
        Effect.gen(function* () {
          const { leaseId } = yield* leased("renewed")
          expect((yield* request("POST", `/v2/concurrency_limits/leases/${leaseId}/renew`, { body: { lease_duration: 600 } })).status).toBe(204)
          const gone = yield* request("POST", `/v2/concurrency_limits/leases/${MISSING}/renew`, { body: {} })
          expect(gone.status).toBe(410)
          expect(gone.body).toEqual({ detail: "Lease not found - it may have expired or been revoked" })
        }))

      it.effect("decrement-with-lease gives back the lease's slots, once", () =>
        Effect.gen(function* () {
          const { limit, leaseId } = yield* leased("given-back")
          expect((yield* decrementWithLease(leaseId)).status).toBe(204)
          expect(yield* slotsOfLimit(limit.id)).toBe(0)
          // A lease given back twice gives back nothing more.
          expect((yield* decrementWithLease(leaseId)).status).toBe(204)
          expect(yield* slotsOfLimit(limit.id)).toBe(0)
        }))
    })
  })
})

const createTag = (tag: string, concurrency_limit: number) => request("POST", "/concurrency_limits/", { body: { tag, concurrency_limit } })
const slotsOf = (tag: string) => Effect.map(request("GET", `/concurrency_limits/tag/${tag}`), (res) => ok(res, 200).active_slots)
const takeTags = (names: Array<string>, taskRunId: string) => request("POST", "/concurrency_limits/increment", { body: { names, task_run_id: taskRunId } })

/** Tags <prefix>-1 and <prefix>-2, limits of 2. */
const twoTags = (prefix: string) =>
  Effect.gen(function* () {
    yield* createTag(`${prefix}-1`, 2)
    yield* createTag(`${prefix}-2`, 2)
    return [`${prefix}-1`, `${prefix}-2`] as const
  })

describe("tag concurrency limits", () => {
  layer(testServer(), { timeout: 60_000 })((it) => {
    // First in its server: the tag limits there are, are its own.
    it.effect("filter lists the tag limits sorted by tag, and no other limits", () =>
      Effect.gen(function* () {
        yield* createTag("db", 42)
        yield* createTag("api", 1)
        yield* makeLimit({ name: "not-a-tag", limit: 1 })
        const listed = ok(yield* request("POST", "/concurrency_limits/filter", { body: {} }), 200).map((l) => l.tag)
        expect(listed).toEqual(["api", "db"])
      }))

    it.effect("creates by tag (201), updates by tag (200, a later updated); it is the global limit tag:<tag>", () =>
      Effect.gen(function* () {
        const created = yield* createTag("upserted", 42)
        expect(created.status).toBe(201)
        expect(created.body).toMatchObject({ tag: "upserted", concurrency_limit: 42, active_slots: [] })
        yield* TestClock.adjust(Duration.seconds(1))
        const updated = yield* createTag("upserted", 4242)
        expect(updated.status).toBe(200)
        expect(updated.body).toMatchObject({ id: created.body.id, concurrency_limit: 4242 })
        expect(Date.parse(updated.body.updated as string)).toBeGreaterThan(Date.parse(created.body.updated as string))
        expect((yield* readLimit("tag:upserted")).limit).toBe(4242)
      }))

    it.effect("reads a tag limit by id and by tag; an unknown tag, or a global limit's id, is 404", () =>
      Effect.gen(function* () {
        const created = ok(yield* createTag("read", 42), 201)
        expect(ok(yield* request("GET", `/concurrency_limits/${created.id}`), 200).tag).toBe("read")
        expect(ok(yield* request("GET", "/concurrency_limits/tag/read"), 200).id).toBe(created.id)
        expect((yield* request("GET", "/concurrency_limits/tag/nope")).body).toEqual({ detail: "Concurrency limit not found" })
        const global = yield* makeLimit({ name: "also-not-a-tag", limit: 1 })
        expect((yield* request("GET", `/concurrency_limits/${global.id}`)).status).toBe(404)
      }))

    it.effect("deletes by tag (null) and by id (200); once gone, or unknown, 404", () =>
      Effect.gen(function* () {
        yield* createTag("deleted-by-tag", 1)
        const byId = ok(yield* createTag("deleted-by-id", 1), 201)
        expect((yield* request("DELETE", "/concurrency_limits/tag/deleted-by-tag")).body).toBeNull()
        expect((yield* request("DELETE", "/concurrency_limits/tag/deleted-by-tag")).status).toBe(404)
        expect((yield* request("DELETE", `/concurrency_limits/${byId.id}`)).status).toBe(200)
        expect((yield* request("DELETE", `/concurrency_limits/${MISSING}`)).status).toBe(404)
      }))

    it.effect("a task run takes a slot of each named tag there is", () =>
      Effect.gen(function* () {
        const [t1, t2] = yield* twoTags("taken")
        const taken = ok(yield* takeTags([t1, t2, "none"], RUN_A), 200)
        expect(taken.map((l) => l.name)).toEqual([t1, t2])
        expect(yield* slotsOf(t1)).toEqual([RUN_A])
        expect(yield* slotsOf(t2)).toEqual([RUN_A])
      }))

    it.effect("a task run gives its slots back, the limits answered by their global names", () =>
      Effect.gen(function* () {
        const [t1, t2] = yield* twoTags("given")
        yield* takeTags([t1, t2], RUN_A)
        const given = ok(yield* request("POST", "/concurrency_limits/decrement", { body: { names: [t1, t2], task_run_id: RUN_A } }), 200)
        expect(given.map((l) => l.name)).toEqual([`tag:${t1}`, `tag:${t2}`])
        expect(yield* slotsOf(t1)).toEqual([])
        expect(yield* slotsOfLimit(`tag:${t1}`)).toBe(0)
      }))

    it.effect("a full tag refuses the task run all of them: 423 with Retry-After 30", () =>
      Effect.gen(function* () {
        const [t1, t2] = yield* twoTags("full")
        yield* takeTags([t1], RUN_B)
        yield* takeTags([t1], RUN_B)
        const full = yield* takeTags([t1, t2], RUN_A)
        expect(full.status).toBe(423)
        expect(full.body.detail).toContain(`Concurrency limit for the ${t1} tag has been reached`)
        expect(Number(full.headers.get("retry-after"))).toBe(30)
        expect(yield* slotsOf(t2)).toEqual([])
      }))

    it.effect("a tag limited to 0 refuses the task run with 423 and no Retry-After: it would deadlock", () =>
      Effect.gen(function* () {
        const [, t2] = yield* twoTags("beside-zero")
        yield* createTag("zero", 0)
        const zero = yield* takeTags([t2, "zero"], RUN_A)
        expect(zero.status).toBe(423)
        expect(zero.headers.get("retry-after")).toBeNull()
        expect(zero.body).toEqual({ detail: 'The concurrency limit on tag "zero" is 0 and will deadlock if the task tries to run again.' })
      }))

    it.effect("reset makes exactly the given task runs hold slots, none without them; an unknown tag is 404", () =>
      Effect.gen(function* () {
        const [t1] = yield* twoTags("reset")
        yield* takeTags([t1], RUN_B)
        const holders = [RUN_A, "33333333-3333-4333-8333-333333333333"]
        expect((yield* request("POST", `/concurrency_limits/tag/${t1}/reset`, { body: { slot_override: holders } })).body).toBeNull()
        expect([...(yield* slotsOf(t1))].sort()).toEqual([...holders].sort())
        expect(yield* slotsOfLimit(`tag:${t1}`)).toBe(2)
        yield* request("POST", `/concurrency_limits/tag/${t1}/reset`, { body: {} })
        expect(yield* slotsOf(t1)).toEqual([])
        expect(yield* slotsOfLimit(`tag:${t1}`)).toBe(0)
        expect((yield* request("POST", "/concurrency_limits/tag/none/reset", { body: {} })).status).toBe(404)
      }))
  })
})
