import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { ConcurrencySlots } from "../../src/concurrency/slots.ts"
import { repossessExpiredLeases } from "../../src/services/repossessor.ts"
import { ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const RUN = "11111111-1111-4111-8111-111111111111"

// Its own file: these settings build their own server (layers are shared within a file).
describe("concurrency leases kept in the database", () => {
  it.layer(testServer({ overrides: { "server.concurrency.lease_storage": "database" } }), { timeout: 60_000 })((it) => {
    it.effect("leases are taken, listed by holder, renewed, given back and repossessed", () =>
      Effect.gen(function* () {
        const limit = ok(yield* request("POST", "/v2/concurrency_limits/", { body: { name: "tag:db-leases", limit: 5 } }), 201)
        const held = ok(yield* request("POST", "/v2/concurrency_limits/increment-with-lease", {
          body: { names: ["tag:db-leases"], slots: 2, lease_duration: 60, holder: { type: "task_run", id: RUN } }
        }), 200)
        expect(ok(yield* request("GET", "/concurrency_limits/tag/db-leases"), 200).active_slots).toEqual([RUN])
        expect((yield* request("POST", `/v2/concurrency_limits/leases/${held.lease_id}/renew`, { body: { lease_duration: 120 } })).status).toBe(204)
        // Renewed for 120 s: still held after 61.
        yield* TestClock.adjust(Duration.seconds(61))
        yield* repossessExpiredLeases
        expect(ok(yield* request("GET", `/v2/concurrency_limits/${limit.id}`), 200).active_slots).toBe(2)
        yield* TestClock.adjust(Duration.seconds(60))
        yield* repossessExpiredLeases
        expect(ok(yield* request("GET", `/v2/concurrency_limits/${limit.id}`), 200).active_slots).toBe(0)
        expect((yield* request("POST", `/v2/concurrency_limits/leases/${held.lease_id}/renew`, { body: {} })).status).toBe(410)

        const again = ok(yield* request("POST", "/v2/concurrency_limits/increment-with-lease", { body: { names: ["tag:db-leases"], slots: 3 } }), 200)
        expect(ok(yield* request("GET", `/v2/concurrency_limits/${limit.id}`), 200).active_slots).toBe(3)
        yield* request("POST", "/v2/concurrency_limits/decrement-with-lease", { body: { lease_id: again.lease_id } })
        expect(ok(yield* request("GET", `/v2/concurrency_limits/${limit.id}`), 200).active_slots).toBe(0)
      })
    )

    it.effect("a lease ended several times at once gives its slots back once", () =>
      Effect.gen(function* () {
        const limit = ok(yield* request("POST", "/v2/concurrency_limits/", { body: { name: "once", limit: 10 } }), 201)
        const lease = (slots: number) =>
          Effect.map(
            request("POST", "/v2/concurrency_limits/increment-with-lease", { body: { names: ["once"], slots, lease_duration: 60 } }),
            (res) => ok(res, 200).lease_id as string
          )
        const first = yield* lease(2)
        yield* lease(3)
        // Side by side in one process, as two replicas would end it at the same moment.
        const slots = yield* ConcurrencySlots
        yield* Effect.all(Array.from({ length: 6 }, () => slots.release(first)), { concurrency: "unbounded" })
        expect((yield* request("POST", "/v2/concurrency_limits/decrement-with-lease", { body: { lease_id: first } })).status).toBe(204)
        expect(ok(yield* request("GET", `/v2/concurrency_limits/${limit.id}`), 200).active_slots).toBe(3)
      })
    )

    it.effect("repossessors running together give back each expired lease once", () =>
      Effect.gen(function* () {
        const limit = ok(yield* request("POST", "/v2/concurrency_limits/", { body: { name: "repossessed-once", limit: 100 } }), 201)
        for (let i = 0; i < 20; i++) {
          ok(yield* request("POST", "/v2/concurrency_limits/increment-with-lease", {
            body: { names: ["repossessed-once"], slots: 2, lease_duration: 60 }
          }), 200)
        }
        yield* TestClock.adjust(Duration.seconds(61))
        // Taken after the others expired: it must keep its slots.
        ok(yield* request("POST", "/v2/concurrency_limits/increment-with-lease", { body: { names: ["repossessed-once"], slots: 5 } }), 200)
        yield* Effect.all([repossessExpiredLeases, repossessExpiredLeases, repossessExpiredLeases], { concurrency: "unbounded" })
        expect(ok(yield* request("GET", `/v2/concurrency_limits/${limit.id}`), 200).active_slots).toBe(5)
      })
    )
  })
})
