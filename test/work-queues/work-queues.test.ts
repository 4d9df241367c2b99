import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const makeQueue = (body: Record<string, unknown>) => Effect.map(request("POST", "/work_queues/", { body }), (res) => ok(res, 201))
const readQueue = (id: string) => Effect.map(request("GET", `/work_queues/${id}`), (res) => ok(res, 200))

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

const runsOf = (id: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  Effect.map(request("POST", `/work_queues/${id}/get_runs`, { body, headers }), (res) => ok(res, 200) as Array<any>)

describe("work queues (the routes without a pool)", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("creates queues in the default agent pool, which is made on demand", () =>
      Effect.gen(function* () {
        const first = yield* makeQueue({ name: "default" })
        expect(first).toMatchObject({ name: "default", priority: 1, work_pool_name: "default-agent-pool", status: "NOT_READY" })
        const pool = ok(yield* request("GET", "/work_pools/default-agent-pool"), 200)
        expect(pool).toMatchObject({ type: "prefect-agent", status: null, default_queue_id: first.id })
        const second = yield* makeQueue({ name: "wq-1", description: "one", concurrency_limit: 5, is_paused: true })
        expect(second).toMatchObject({ priority: 2, description: "one", concurrency_limit: 5, active_slots: 0, is_paused: true, status: "NOT_READY" })
        const dup = yield* request("POST", "/work_queues/", { body: { name: "wq-1" } })
        expect(dup.status).toBe(409)
        expect(dup.body).toEqual({ detail: "A work queue with this name already exists." })
        for (const name of ["work/queue", "work%queue"]) {
          const res = yield* request("POST", "/work_queues/", { body: { name } })
          expect(res.status).toBe(422)
          expect(res.body.detail[0].loc).toEqual(["body", "name"])
        }
        expect(yield* readQueue(second.id)).toEqual(second)
        expect(ok(yield* request("GET", "/work_queues/name/wq-1"), 200).id).toBe(second.id)
        expect((yield* request("GET", "/work_queues/name/none")).body).toEqual({ detail: "work queue not found" })
        expect((yield* request("GET", `/work_queues/${MISSING}`)).body).toEqual({ detail: "work queue not found" })
        expect((yield* request("GET", "/work_queues/not-a-uuid")).status).toBe(404)
      })
    )

    it.effect("PATCH changes a queue by id without moving others; DELETE removes it but never a pool's default", () =>
      Effect.gen(function* () {
        const queue = yield* makeQueue({ name: "patch-me" })
        expect((yield* request("PATCH", `/work_queues/${queue.id}`, { body: { priority: 1, concurrency_limit: 2 } })).status).toBe(204)
        expect(yield* readQueue(queue.id)).toMatchObject({ priority: 1, concurrency_limit: 2 })
        const defaultQueue = ok(yield* request("GET", "/work_queues/name/default"), 200)
        expect(defaultQueue.priority).toBe(1)
        yield* request("PATCH", `/work_queues/${queue.id}`, { body: { is_paused: true } })
        expect((yield* readQueue(queue.id)).status).toBe("PAUSED")
        const missing = yield* request("PATCH", `/work_queues/${MISSING}`, { body: {} })
        expect(missing.body).toEqual({ detail: `Work Queue ${MISSING} not found` })
        expect((yield* request("DELETE", `/work_queues/${queue.id}`)).status).toBe(204)
        expect((yield* request("DELETE", `/work_queues/${queue.id}`)).body).toEqual({ detail: "work queue not found" })
        expect((yield* request("DELETE", `/work_queues/${defaultQueue.id}`)).status).toBe(409)
      })
    )

    it.effect("get_runs hands out the queue's Scheduled runs within its free slots", () =>
      Effect.gen(function* () {
        for (const [name, limit, expected] of [["gr-10", 10, 3], ["gr-5", 5, 2], ["gr-1", 1, 0]] as const) {
          const queue = yield* makeQueue({ name, concurrency_limit: limit })
          yield* fillQueue(name)
          expect(yield* runsOf(queue.id), name).toHaveLength(expected)
        }
        const open = yield* makeQueue({ name: "gr-open" })
        yield* fillQueue("gr-open")
        expect(yield* runsOf(open.id, { limit: 2 })).toHaveLength(2)
        expect((yield* runsOf(open.id)).every((r: any) => r.state_type === "SCHEDULED" && r.work_queue_name === "gr-open")).toBe(true)
        const clock = yield* TestClock.currentTimeMillis
        expect(yield* runsOf(open.id, { scheduled_before: new Date(clock - 7_200_000).toISOString() })).toEqual([])
        const missing = yield* request("POST", `/work_queues/${MISSING}/get_runs`, { body: {} })
        expect(missing.status).toBe(404)
        yield* request("PATCH", `/work_queues/${open.id}`, { body: { is_paused: true } })
        expect(yield* runsOf(open.id)).toEqual([])
      })
    )

    it.effect("a poll makes a queue READY and healthy; the UI's look does not count", () =>
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
        expect(yield* readQueue(queue.id)).toMatchObject({ status: "READY", last_polled: expect.any(String) })
        expect((yield* status()).healthy).toBe(true)
        yield* TestClock.adjust(Duration.seconds(61))
        expect((yield* status()).healthy).toBe(false)
        expect((yield* request("GET", `/work_queues/${MISSING}/status`)).status).toBe(404)
      })
    )

    it.effect("concurrency_status pages through the runs holding the queue's slots", () =>
      Effect.gen(function* () {
        const queue = yield* makeQueue({ name: "slots", concurrency_limit: 4 })
        const flowId = yield* makeFlow("slots-flow")
        for (const type of ["RUNNING", "PENDING", "CANCELLING", "COMPLETED"]) {
          ok(yield* request("POST", "/flow_runs/", {
            body: { flow_id: flowId, work_pool_name: "default-agent-pool", work_queue_name: "slots", state: { type } }
          }))
        }
        const res = ok(yield* request("POST", `/work_queues/${queue.id}/concurrency_status`, { body: { limit: 2 } }), 200)
        expect(res).toMatchObject({ active_slots: 3, count: 3, limit: 2, pages: 2, page: 1, concurrency_limit: 4 })
        expect(res.flow_runs).toHaveLength(2)
        expect((yield* readQueue(queue.id)).active_slots).toBe(3)
        expect((yield* request("POST", `/work_queues/${MISSING}/concurrency_status`, { body: {} })).body).toEqual({
          detail: "Work queue not found."
        })
      })
    )

    it.effect("filters queues across pools, by name", () =>
      Effect.gen(function* () {
        yield* request("POST", "/work_pools/", { body: { name: "elsewhere", type: "process" } })
        yield* request("POST", "/work_pools/elsewhere/queues", { body: { name: "xq-b" } })
        yield* makeQueue({ name: "xq-a" })
        const res = ok(yield* request("POST", "/work_queues/filter", { body: { work_queues: { name: { startswith_: ["xq-"] } } } }), 200)
        expect(res.map((q: any) => [q.name, q.work_pool_name])).toEqual([["xq-a", "default-agent-pool"], ["xq-b", "elsewhere"]])
        expect((yield* request("POST", "/work_queues/filter", { body: { offset: -1 } })).status).toBe(422)
        expect((yield* request("POST", "/work_queues/filter", { body: { work_queues: { name: { like_: "x" } } } })).status).toBe(422)
      })
    )
  })
})
