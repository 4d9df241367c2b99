import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { rebalance } from "../../src/work-pools/queues-repo.ts"
import { WorkQueue } from "../../src/work-pools/schemas.ts"
import { makeFlow, ok, okAs, once } from "../support/api.ts"
import { clientOf, request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const makeQueue = (body: Record<string, unknown>) => Effect.map(request("POST", "/work_queues/", { body }), (res) => okAs(WorkQueue, res, 201))
const readQueue = (id: string) => Effect.flatMap(clientOf("workQueues"), (workQueues) => workQueues.read({ path: { id } }))

/** 3 Scheduled runs (due an hour ago), 1 Running and 2 Pending filed under the queue's name. */
const fillQueue = (queueName: string) =>
  Effect.gen(function* () {
    const flowId = yield* makeFlow(`${queueName}-flow`)
    const clock = yield* TestClock.currentTimeMillis
    const scheduled = { type: "SCHEDULED", state_details: { scheduled_time: new Date(clock - 3_600_000).toISOString() } }
    for (const state of [scheduled, scheduled, scheduled, { type: "RUNNING" }, { type: "PENDING" }, { type: "PENDING" }]) {
      ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, work_queue_name: queueName, state } }))
    }
  })
/** A queue without a limit, filled. */
const openQueue = (name: string) => Effect.tap(makeQueue({ name }), () => fillQueue(name))

const runsOf = (id: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  Effect.map(request("POST", `/work_queues/${id}/get_runs`, { body, headers }), (res) => ok(res, 200))

/** The queue of a pool, read by name. */
const poolQueue = (pool: string, name: string) => Effect.map(request("GET", `/work_pools/${pool}/queues/${name}`), (res) => ok(res, 200))
const makePoolQueue = (pool: string, body: Record<string, unknown>) =>
  Effect.map(request("POST", `/work_pools/${pool}/queues`, { body }), (res) => okAs(WorkQueue, res, 201))
const queuesOf = (pool: string, body: Record<string, unknown> = {}) =>
  Effect.map(request("POST", `/work_pools/${pool}/queues/filter`, { body }), (res) => ok(res, 200))
const priorities = (pool: string) => Effect.map(queuesOf(pool), (queues) => Object.fromEntries(queues.map((q) => [q.name as string, q.priority])))
const makePool = (name: string) => Effect.map(request("POST", "/work_pools/", { body: { name, type: "process" } }), (res) => ok(res, 201))

/** A pool whose queues are top (1), default (2), next (3) and low (99). */
const prioritised = (pool: string) =>
  Effect.gen(function* () {
    yield* makePool(pool)
    expect((yield* makePoolQueue(pool, { name: "low", priority: 99 })).priority).toBe(99)
    expect((yield* makePoolQueue(pool, { name: "next" })).priority).toBe(2)
    expect((yield* makePoolQueue(pool, { name: "top", priority: 1 })).priority).toBe(1)
  })

/** The pool spec-pool's queues default, alpha (priority 2), alphabet, beta and Alps; read only. */
const specPool = once(
  Effect.gen(function* () {
    yield* makePool("spec-pool")
    const a = yield* makePoolQueue("spec-pool", { name: "alpha", priority: 2 })
    for (const name of ["alphabet", "beta", "Alps"]) yield* makePoolQueue("spec-pool", { name })
    return a
  })
)
const specNames = (body: Record<string, unknown>) => Effect.map(queuesOf("spec-pool", body), (qs) => qs.map((q) => q.name))

describe("work queues", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    describe("the routes without a pool", () => {
      // First in its server: it makes the default agent pool.
      it.effect("creates queues in the default agent pool, which is made on demand", () =>
        Effect.gen(function* () {
          const first = ok(yield* request("POST", "/work_queues/", { body: { name: "default" } }), 201)
          expect(first).toMatchObject({ name: "default", priority: 1, work_pool_name: "default-agent-pool", status: "NOT_READY" })
          const pool = ok(yield* request("GET", "/work_pools/default-agent-pool"), 200)
          expect(pool).toMatchObject({ type: "prefect-agent", status: null, default_queue_id: first.id })
          const second = ok(yield* request("POST", "/work_queues/", { body: { name: "wq-1", description: "one", concurrency_limit: 5, is_paused: true } }), 201)
          expect(second).toMatchObject({ priority: 2, description: "one", concurrency_limit: 5, active_slots: 0, is_paused: true, status: "NOT_READY" })
          expect((yield* request("GET", `/work_queues/${second.id}`)).body).toEqual(second)
        }))

      it.effect("refuses a name taken (409) and names with / or % (422)", () =>
        Effect.gen(function* () {
          yield* makeQueue({ name: "wq-taken" })
          const dup = yield* request("POST", "/work_queues/", { body: { name: "wq-taken" } })
          expect(dup.status).toBe(409)
          expect(dup.body).toEqual({ detail: "A work queue with this name already exists." })
          for (const name of ["work/queue", "work%queue"]) {
            const res = yield* request("POST", "/work_queues/", { body: { name } })
            expect(res.status).toBe(422)
            expect(res.body.detail[0].loc).toEqual(["body", "name"])
          }
        }))

      it.effect("reads a queue by name; an unknown name or id is 404", () =>
        Effect.gen(function* () {
          const queue = yield* makeQueue({ name: "wq-named" })
          expect(ok(yield* request("GET", "/work_queues/name/wq-named"), 200).id).toBe(queue.id)
          expect((yield* request("GET", "/work_queues/name/none")).body).toEqual({ detail: "work queue not found" })
          expect((yield* request("GET", `/work_queues/${MISSING}`)).body).toEqual({ detail: "work queue not found" })
          expect((yield* request("GET", "/work_queues/not-a-uuid")).status).toBe(404)
        }))

      it.effect("PATCH changes a queue by id without moving the others", () =>
        Effect.gen(function* () {
          const queue = yield* makeQueue({ name: "patch-me" })
          expect((yield* request("PATCH", `/work_queues/${queue.id}`, { body: { priority: 1, concurrency_limit: 2 } })).status).toBe(204)
          expect(yield* readQueue(queue.id)).toMatchObject({ priority: 1, concurrency_limit: 2 })
          expect(ok(yield* request("GET", "/work_queues/name/default"), 200).priority).toBe(1)
        }))

      it.effect("PATCH pauses a queue: PAUSED; an unknown queue is 404", () =>
        Effect.gen(function* () {
          const queue = yield* makeQueue({ name: "pause-me" })
          yield* request("PATCH", `/work_queues/${queue.id}`, { body: { is_paused: true } })
          expect((yield* readQueue(queue.id)).status).toBe("PAUSED")
          const missing = yield* request("PATCH", `/work_queues/${MISSING}`, { body: {} })
          expect(missing.body).toEqual({ detail: `Work Queue ${MISSING} not found` })
        }))

      it.effect("DELETE removes a queue (204), once; never a pool's default queue (409)", () =>
        Effect.gen(function* () {
          const queue = yield* makeQueue({ name: "delete-me" })
          expect((yield* request("DELETE", `/work_queues/${queue.id}`)).status).toBe(204)
          expect((yield* request("DELETE", `/work_queues/${queue.id}`)).body).toEqual({ detail: "work queue not found" })
          const defaultQueue = ok(yield* request("GET", "/work_queues/name/default"), 200)
          expect((yield* request("DELETE", `/work_queues/${defaultQueue.id}`)).status).toBe(409)
        }))

      for (const [name, limit, expected] of [["gr-10", 10, 3], ["gr-5", 5, 2], ["gr-1", 1, 0]] as const) {
        it.effect(`get_runs hands out the queue's Scheduled runs within its free slots: ${expected} of a limit of ${limit}`, () =>
          Effect.gen(function* () {
            const queue = yield* makeQueue({ name, concurrency_limit: limit })
            yield* fillQueue(name)
            expect(yield* runsOf(queue.id)).toHaveLength(expected)
          }))
      }

      it.effect("get_runs answers only the queue's Scheduled runs, at most the limit asked, due before the time asked", () =>
        Effect.gen(function* () {
          const open = yield* openQueue("gr-open")
          expect(yield* runsOf(open.id, { limit: 2 })).toHaveLength(2)
          expect((yield* runsOf(open.id)).every((r) => r.state_type === "SCHEDULED" && r.work_queue_name === "gr-open")).toBe(true)
          const clock = yield* TestClock.currentTimeMillis
          expect(yield* runsOf(open.id, { scheduled_before: new Date(clock - 7_200_000).toISOString() })).toEqual([])
        }))

      it.effect("get_runs answers nothing from a paused queue; an unknown queue is 404", () =>
        Effect.gen(function* () {
          const paused = yield* openQueue("gr-paused")
          yield* request("PATCH", `/work_queues/${paused.id}`, { body: { is_paused: true } })
          expect(yield* runsOf(paused.id)).toEqual([])
          expect((yield* request("POST", `/work_queues/${MISSING}/get_runs`, { body: {} })).status).toBe(404)
        }))

      it.effect("a poll makes a queue READY and healthy, for 60 seconds; the UI's look does not count", () =>
        Effect.gen(function* () {
          const queue = yield* makeQueue({ name: "watched" })
          const status = () => Effect.map(request("GET", `/work_queues/${queue.id}/status`), (res) => ok(res, 200))
          expect(yield* status()).toEqual({
            healthy: false,
            late_runs_count: 0,
            last_polled: null,
            health_check_policy: { maximum_late_runs: 0, maximum_seconds_since_last_polled: 60 }
          })
          yield* runsOf(queue.id, {}, { "x-prefect-ui": "true" })
          expect((yield* readQueue(queue.id)).last_polled).toBeNull()
          yield* runsOf(queue.id)
          expect(ok(yield* request("GET", `/work_queues/${queue.id}`), 200)).toMatchObject({ status: "READY", last_polled: expect.any(String) })
          expect((yield* status()).healthy).toBe(true)
          yield* TestClock.adjust(Duration.seconds(61))
          expect((yield* status()).healthy).toBe(false)
          expect((yield* request("GET", `/work_queues/${MISSING}/status`)).status).toBe(404)
        }))

      it.effect("concurrency_status pages through the runs holding the queue's slots", () =>
        Effect.gen(function* () {
          const queue = yield* makeQueue({ name: "slots", concurrency_limit: 4 })
          const flowId = yield* makeFlow("slots-flow")
          for (const type of ["RUNNING", "PENDING", "CANCELLING", "COMPLETED"]) {
            ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, work_pool_name: "default-agent-pool", work_queue_name: "slots", state: { type } } }))
          }
          const res = ok(yield* request("POST", `/work_queues/${queue.id}/concurrency_status`, { body: { limit: 2 } }), 200)
          expect(res).toMatchObject({ active_slots: 3, count: 3, limit: 2, pages: 2, page: 1, concurrency_limit: 4 })
          expect(res.flow_runs).toHaveLength(2)
          expect((yield* readQueue(queue.id)).active_slots).toBe(3)
          expect((yield* request("POST", `/work_queues/${MISSING}/concurrency_status`, { body: {} })).body).toEqual({ detail: "Work queue not found." })
        }))

      it.effect("filters queues across pools, by name; refuses a negative offset and a criterion there is not (422)", () =>
        Effect.gen(function* () {
          yield* makePool("elsewhere")
          yield* makePoolQueue("elsewhere", { name: "xq-b" })
          yield* makeQueue({ name: "xq-a" })
          const res = ok(yield* request("POST", "/work_queues/filter", { body: { work_queues: { name: { startswith_: ["xq-"] } } } }), 200)
          expect(res.map((q) => [q.name, q.work_pool_name])).toEqual([["xq-a", "default-agent-pool"], ["xq-b", "elsewhere"]])
          expect((yield* request("POST", "/work_queues/filter", { body: { offset: -1 } })).status).toBe(422)
          expect((yield* request("POST", "/work_queues/filter", { body: { work_queues: { name: { like_: "x" } } } })).status).toBe(422)
        }))
    })

    describe("the queues of a pool", () => {
      it("rebalance moves priorities as the reference does", () => {
        expect([...rebalance([{ id: "A", priority: 1 }, { id: "B", priority: 2 }, { id: "C", priority: 3 }, { id: "D", priority: 2 }], new Map([["D", 2]])).entries()].sort())
          .toEqual([["A", 1], ["B", 3], ["C", 4], ["D", 2]])
        expect([...rebalance([{ id: "A", priority: 1 }, { id: "B", priority: 5 }, { id: "D", priority: 2 }], new Map([["D", 2]])).entries()].sort())
          .toEqual([["A", 1], ["B", 5], ["D", 2]])
      })

      it.effect("keep unique priorities: a new queue takes the next one, or moves the others down", () =>
        Effect.gen(function* () {
          yield* prioritised("prio")
          expect(yield* priorities("prio")).toEqual({ top: 1, default: 2, next: 3, low: 99 })
        }))

      it.effect("a queue given a priority moves the others down", () =>
        Effect.gen(function* () {
          yield* prioritised("prio-moved")
          yield* request("PATCH", "/work_pools/prio-moved/queues/low", { body: { priority: 2 } })
          expect(yield* priorities("prio-moved")).toEqual({ top: 1, low: 2, default: 3, next: 4 })
        }))

      it.effect("deleting leaves gaps; a new queue without a priority takes the first one", () =>
        Effect.gen(function* () {
          yield* prioritised("prio-gap")
          yield* request("PATCH", "/work_pools/prio-gap/queues/low", { body: { priority: 2 } })
          expect((yield* request("DELETE", "/work_pools/prio-gap/queues/low")).status).toBe(204)
          expect((yield* makePoolQueue("prio-gap", { name: "gap" })).priority).toBe(2)
        }))

      it.effect("refuse a name the pool has (409), renamed too (the integrity 409), a priority of 0 (422) and an unknown pool (404)", () =>
        Effect.gen(function* () {
          yield* prioritised("prio-refused")
          const dup = yield* request("POST", "/work_pools/prio-refused/queues", { body: { name: "next" } })
          expect(dup.status).toBe(409)
          expect(dup.body).toEqual({ detail: "A work queue with this name already exists in work pool 'prio-refused'." })
          const renamed = yield* request("PATCH", "/work_pools/prio-refused/queues/low", { body: { name: "next" } })
          expect(renamed.status).toBe(409)
          expect(renamed.body).toEqual({ detail: "Data integrity conflict. This usually means a unique or foreign key constraint was violated. See server logs for details." })
          expect((yield* request("POST", "/work_pools/prio-refused/queues", { body: { name: "zero", priority: 0 } })).status).toBe(422)
          expect((yield* request("POST", "/work_pools/nowhere/queues", { body: { name: "x" } })).body).toEqual({ detail: 'Work pool "nowhere" not found.' })
        }))

      it.effect("the default queue cannot be deleted (409)", () =>
        Effect.gen(function* () {
          yield* makePool("keeps-default")
          const keep = yield* request("DELETE", "/work_pools/keeps-default/queues/default")
          expect(keep.status).toBe(409)
          expect(keep.body).toEqual({ detail: "Can't delete a pool's default queue." })
        }))

      const filters: Array<readonly [string, (alpha: string) => Record<string, unknown>, Array<string>]> = [
        ["all of them, by priority then creation", () => ({}), ["default", "alpha", "alphabet", "beta", "Alps"]],
        ["by id", (alpha) => ({ work_queues: { id: { any_: [alpha] } } }), ["alpha"]],
        ["by name", () => ({ work_queues: { name: { any_: ["beta", "nothing"] } } }), ["beta"]],
        ["by a name's start, in any case", () => ({ work_queues: { name: { startswith_: ["alp"] } } }), ["alpha", "alphabet", "Alps"]],
        ["by a name's start and a name", () => ({ work_queues: { name: { startswith_: ["alp"], any_: ["alpha", "beta"] } } }), ["alpha"]],
        ["by id or name", (alpha) => ({ work_queues: { operator: "or_", id: { any_: [alpha] }, name: { any_: ["beta"] } } }), ["alpha", "beta"]],
        ["from an offset", () => ({ offset: 3 }), ["beta", "Alps"]],
        ["up to a limit", () => ({ limit: 2 }), ["default", "alpha"]]
      ]
      for (const [title, body, expected] of filters) {
        it.effect(`filter ${title}`, () =>
          Effect.gen(function* () {
            const alpha = yield* specPool
            expect(yield* specNames(body(alpha.id))).toEqual(expected)
          }))
      }

      it.effect("filter answers the reference's fields", () =>
        Effect.gen(function* () {
          yield* specPool
          const first = (yield* queuesOf("spec-pool"))[0]
          expect(Object.keys(first).sort()).toEqual(
            ["active_slots", "concurrency_limit", "created", "description", "filter", "id", "is_paused", "last_polled", "name",
              "priority", "status", "updated", "work_pool_id", "work_pool_name"].sort()
          )
        }))

      it.effect("filter refuses a negative offset (422); an unknown pool is 404", () =>
        Effect.gen(function* () {
          yield* specPool
          const negative = yield* request("POST", "/work_pools/spec-pool/queues/filter", { body: { offset: -1 } })
          expect(negative.status).toBe(422)
          expect(negative.body.detail[0].loc).toEqual(["body", "offset"])
          expect((yield* request("POST", "/work_pools/nowhere/queues/filter", { body: {} })).status).toBe(404)
        }))

      it.effect("refuse a name with > and a negative limit (422)", () =>
        Effect.gen(function* () {
          yield* specPool
          expect((yield* request("POST", "/work_pools/spec-pool/queues", { body: { name: "a>b" } })).status).toBe(422)
          expect((yield* request("POST", "/work_pools/spec-pool/queues", { body: { name: "neg", concurrency_limit: -1 } })).status).toBe(422)
        }))

      it.effect("filter answers at most default_limit (200) queues, and the rest with an offset", () =>
        Effect.gen(function* () {
          yield* makePool("big-pool")
          for (let i = 0; i < 249; i++) yield* makePoolQueue("big-pool", { name: `q-${String(i).padStart(3, "0")}` })
          expect(yield* queuesOf("big-pool")).toHaveLength(200)
          expect(yield* queuesOf("big-pool", { offset: 200 })).toHaveLength(50)
          expect((yield* request("POST", "/work_pools/big-pool/queues/filter", { body: { limit: 250 } })).status).toBe(422)
          expect(yield* queuesOf("big-pool", { work_queues: { name: { startswith_: ["q-24"] } } })).toHaveLength(9)
        }))

      it.effect("PATCH: pausing makes a queue PAUSED, unpausing NOT_READY, or READY when polled lately", () =>
        Effect.gen(function* () {
          yield* makePool("q-status")
          yield* makePoolQueue("q-status", { name: "q" })
          yield* request("PATCH", "/work_pools/q-status/queues/q", { body: { is_paused: true, concurrency_limit: 3, description: "x" } })
          expect(yield* poolQueue("q-status", "q")).toMatchObject({ is_paused: true, status: "PAUSED", concurrency_limit: 3, active_slots: 0, description: "x" })
          yield* request("PATCH", "/work_pools/q-status/queues/q", { body: { is_paused: false } })
          expect((yield* poolQueue("q-status", "q")).status).toBe("NOT_READY")
          yield* request("PATCH", "/work_pools/q-status/queues/q", { body: { is_paused: true } })
          const clock = yield* TestClock.currentTimeMillis
          yield* request("PATCH", "/work_pools/q-status/queues/q", { body: { is_paused: false, last_polled: new Date(clock).toISOString() } })
          expect((yield* poolQueue("q-status", "q")).status).toBe("READY")
        }))

      it.effect("PATCH renames a queue; the old name is 404, a name taken is 409", () =>
        Effect.gen(function* () {
          yield* makePool("q-renamed")
          yield* makePoolQueue("q-renamed", { name: "q" })
          yield* request("PATCH", "/work_pools/q-renamed/queues/q", { body: { name: "renamed" } })
          expect((yield* request("GET", "/work_pools/q-renamed/queues/renamed")).status).toBe(200)
          const missing = yield* request("GET", "/work_pools/q-renamed/queues/q")
          expect(missing.body).toEqual({ detail: "Work pool queue 'q-renamed/q' not found." })
          yield* makePoolQueue("q-renamed", { name: "other" })
          expect((yield* request("PATCH", "/work_pools/q-renamed/queues/other", { body: { name: "renamed" } })).status).toBe(409)
        }))
    })
  })
})
