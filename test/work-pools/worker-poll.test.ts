import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { checkReadiness } from "../../src/services/foreman.ts"
import { idOf, makeDeployment, makeFlow, ok, once } from "../support/api.ts"
import { type Json, request, testServer } from "../support/server.ts"

const HOUR = 3_600_000

/** A pool with queues AA (priority 1), AB (2) and AC (3), each holding 5 Scheduled runs (−1h … +3h), 1 Running and 1 Pending. */
const poolWithRuns = (pool: string, options: { readonly queueLimits?: Record<string, number>; readonly poolLimit?: number } = {}) =>
  Effect.gen(function* () {
    yield* request("POST", "/work_pools/", { body: { name: pool, type: "process", concurrency_limit: options.poolLimit ?? null } })
    const flowId = yield* makeFlow(`${pool}-flow`)
    const clock = yield* TestClock.currentTimeMillis
    const runs: Record<string, Array<string>> = {}
    for (const [i, queue] of ["AA", "AB", "AC"].entries()) {
      ok(yield* request("POST", `/work_pools/${pool}/queues`, {
        body: { name: queue, priority: i + 1, concurrency_limit: options.queueLimits?.[queue] ?? null }
      }), 201)
      runs[queue] = []
      for (let h = -1; h <= 3; h++) {
        const run = ok(yield* request("POST", "/flow_runs/", {
          body: {
            flow_id: flowId,
            name: `${queue}${h + 1}`,
            work_pool_name: pool,
            work_queue_name: queue,
            state: { type: "SCHEDULED", state_details: { scheduled_time: new Date(clock + h * HOUR).toISOString() } }
          }
        }))
        runs[queue]!.push(idOf(run))
      }
      for (const type of ["RUNNING", "PENDING"]) {
        ok(yield* request("POST", "/flow_runs/", {
          body: { flow_id: flowId, name: `${queue}-${type}`, work_pool_name: pool, work_queue_name: queue, state: { type } }
        }))
      }
    }
    return { clock, runs }
  })

const poll = (pool: string, body: Record<string, unknown> = {}) =>
  Effect.map(request("POST", `/work_pools/${pool}/get_scheduled_flow_runs`, { body }), (res) => ok(res, 200))

const names = (responses: Json) => responses.map((r) => r.flow_run.name)

describe("the worker poll", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    describe("answers Scheduled runs", () => {
      const pollA = once(poolWithRuns("poll-a"))

      it.effect("by queue priority, then time", () =>
        Effect.gen(function* () {
          yield* pollA
          expect(names(yield* poll("poll-a"))).toEqual(["AA0", "AA1", "AA2", "AA3", "AA4", "AB0", "AB1", "AB2", "AB3", "AB4", "AC0", "AC1", "AC2", "AC3", "AC4"])
        }))

      it.effect("each with its pool and queue ids, the run without its pool's name", () =>
        Effect.gen(function* () {
          yield* pollA
          const [first] = yield* poll("poll-a")
          expect(first).toMatchObject({ work_pool_id: expect.any(String), work_queue_id: expect.any(String) })
          expect(first!.flow_run).toMatchObject({ state_type: "SCHEDULED", work_queue_name: "AA" })
          expect(first!.flow_run).not.toHaveProperty("work_pool_name")
        }))

      it.effect("at most the limit asked", () =>
        Effect.gen(function* () {
          yield* pollA
          expect(yield* poll("poll-a", { limit: 7 })).toHaveLength(7)
        }))

      it.effect("of the queues asked", () =>
        Effect.gen(function* () {
          yield* pollA
          expect(names(yield* poll("poll-a", { work_queue_names: ["AB"] }))).toEqual(["AB0", "AB1", "AB2", "AB3", "AB4"])
          expect(yield* poll("poll-a", { work_queue_names: ["AA", "AB"] })).toHaveLength(10)
        }))

      it.effect("scheduled within the bounds asked, both inclusive", () =>
        Effect.gen(function* () {
          const { clock } = yield* pollA
          const now = new Date(clock).toISOString()
          expect(names(yield* poll("poll-a", { scheduled_before: now }))).toEqual(["AA0", "AA1", "AB0", "AB1", "AC0", "AC1"])
          // Both bounds are inclusive: the runs due exactly now are on either side.
          expect(yield* poll("poll-a", { scheduled_after: now })).toHaveLength(12)
          expect(yield* poll("poll-a", { scheduled_after: now, scheduled_before: new Date(clock - HOUR).toISOString() })).toEqual([])
        }))

      it.effect("refusing an unknown queue or pool (404) and a limit above 200 (422)", () =>
        Effect.gen(function* () {
          yield* pollA
          const missing = yield* request("POST", "/work_pools/poll-a/get_scheduled_flow_runs", { body: { work_queue_names: ["ZZ"] } })
          expect(missing.status).toBe(404)
          expect(missing.body).toEqual({ detail: "Work pool queue 'poll-a/ZZ' not found." })
          expect((yield* request("POST", "/work_pools/nowhere/get_scheduled_flow_runs", { body: {} })).status).toBe(404)
          expect((yield* request("POST", "/work_pools/poll-a/get_scheduled_flow_runs", { body: { limit: 201 } })).status).toBe(422)
        }))
    })

    describe("leaves out", () => {
      const limited = (pool: string) => poolWithRuns(pool, { queueLimits: { AA: 4, AB: 2, AC: 10 } })

      it.effect("what queue concurrency limits leave no slot for", () =>
        Effect.gen(function* () {
          yield* limited("poll-b")
          // AA has 2 of 4 slots taken, AB 2 of 2.
          expect(names(yield* poll("poll-b"))).toEqual(["AA0", "AA1", "AC0", "AC1", "AC2", "AC3", "AC4"])
        }))

      it.effect("paused queues", () =>
        Effect.gen(function* () {
          yield* limited("poll-b-queue")
          yield* request("PATCH", "/work_pools/poll-b-queue/queues/AC", { body: { is_paused: true } })
          expect(names(yield* poll("poll-b-queue"))).toEqual(["AA0", "AA1"])
        }))

      it.effect("paused pools", () =>
        Effect.gen(function* () {
          yield* limited("poll-b-pool")
          yield* request("PATCH", "/work_pools/poll-b-pool", { body: { is_paused: true } })
          expect(yield* poll("poll-b-pool")).toEqual([])
        }))

      it.effect("what the pool's concurrency limit leaves no slot for, giving the free ones by priority", () =>
        Effect.gen(function* () {
          // A pool limit of 8 with 6 slots taken leaves 2.
          yield* poolWithRuns("poll-c", { poolLimit: 8 })
          expect(names(yield* poll("poll-c"))).toEqual(["AA0", "AA1"])
          expect((yield* request("GET", "/work_pools/poll-c")).body.active_slots).toBe(6)
          yield* request("PATCH", "/work_pools/poll-c", { body: { concurrency_limit: 6 } })
          expect(yield* poll("poll-c")).toEqual([])
        }))
    })

    describe("readiness", () => {
      /** A pool with a deployment, its default queue paused, and a queue other. */
      const polledPool = (pool: string) =>
        Effect.gen(function* () {
          yield* request("POST", "/work_pools/", { body: { name: pool, type: "process" } })
          const flowId = yield* makeFlow(`${pool}-flow`)
          const dep = yield* makeDeployment({ name: "polled", flow_id: flowId, work_pool_name: pool })
          yield* request("PATCH", `/work_pools/${pool}/queues/default`, { body: { is_paused: true } })
          yield* request("POST", `/work_pools/${pool}/queues`, { body: { name: "other" } })
          const queue = (name: string) => Effect.map(request("GET", `/work_pools/${pool}/queues/${name}`), (res) => ok(res, 200))
          const deploymentStatus = Effect.map(request("GET", `/deployments/${dep.id}`), (res) => res.body.status)
          return { queue, deploymentStatus }
        })

      it.effect("a poll marks the queues it polls polled and READY (a paused one stays PAUSED), and their deployments READY", () =>
        Effect.gen(function* () {
          const { queue, deploymentStatus } = yield* polledPool("poll-d")
          // A poll naming a queue the pool lacks is refused before it counts any queue as polled.
          const refused = yield* request("POST", "/work_pools/poll-d/get_scheduled_flow_runs", { body: { work_queue_names: ["other", "absent"] } })
          expect(refused.status).toBe(404)
          expect(yield* queue("other")).toMatchObject({ status: "NOT_READY", last_polled: null })
          yield* poll("poll-d", { work_queue_names: ["other", "other"] })
          expect(yield* queue("other")).toMatchObject({ status: "READY", last_polled: expect.any(String) })
          expect(yield* queue("default")).toMatchObject({ status: "PAUSED", last_polled: null })
          expect(yield* deploymentStatus).toBe("NOT_READY")
          yield* poll("poll-d")
          expect(yield* queue("default")).toMatchObject({ status: "PAUSED", last_polled: expect.any(String) })
          expect(yield* deploymentStatus).toBe("READY")
        }))

      it.effect("the pool's status comes from its workers, not from polls", () =>
        Effect.gen(function* () {
          yield* polledPool("poll-d-pool")
          yield* poll("poll-d-pool")
          expect((yield* request("GET", "/work_pools/poll-d-pool")).body.status).toBe("NOT_READY")
        }))

      it.effect("unpolled for over a minute, the queue and the deployment are NOT_READY again", () =>
        Effect.gen(function* () {
          const { queue, deploymentStatus } = yield* polledPool("poll-d-later")
          yield* poll("poll-d-later")
          yield* TestClock.adjust(Duration.seconds(61))
          yield* checkReadiness
          expect((yield* queue("other")).status).toBe("NOT_READY")
          expect(yield* deploymentStatus).toBe("NOT_READY")
        }))
    })

    it.effect("a worker loop over plain HTTP drains a pool, queue priorities first", () =>
      Effect.gen(function* () {
        const { clock } = yield* poolWithRuns("poll-e")
        const order: Array<string> = []
        const flowRunIds = new Set<string>()
        for (let round = 0; round < 10; round++) {
          yield* request("POST", "/work_pools/poll-e/workers/heartbeat", { body: { name: "loop", heartbeat_interval_seconds: 30 } })
          const due = yield* poll("poll-e", { scheduled_before: new Date(clock + 4 * HOUR).toISOString(), limit: 4 })
          if (due.length === 0) break
          for (const { flow_run } of due) {
            for (const type of ["PENDING", "RUNNING", "COMPLETED"]) {
              const res = ok(yield* request("POST", `/flow_runs/${flow_run.id}/set_state`, { body: { state: { type }, force: type !== "PENDING" } }))
              expect(res.status, `${flow_run.name} → ${type}`).toBe("ACCEPT")
            }
            order.push(flow_run.name as string)
            flowRunIds.add(idOf(flow_run))
          }
        }
        expect(flowRunIds.size).toBe(15)
        expect(order.slice(0, 5).every((name) => name.startsWith("AA"))).toBe(true)
        expect(order.slice(10).every((name) => name.startsWith("AC"))).toBe(true)
        expect((yield* request("GET", "/work_pools/poll-e")).body.status).toBe("READY")
      })
    )

    it.effect("concurrency_status lists each queue's slot holders, a page of queues at a time", () =>
      Effect.gen(function* () {
        yield* poolWithRuns("poll-f", { poolLimit: 10 })
        const res = yield* request("POST", "/work_pools/poll-f/concurrency_status", { body: { limit: 2, flow_run_limit: 1 } })
        expect(res.status).toBe(200)
        expect(res.body).toMatchObject({ active_slots: 6, count: 4, limit: 2, pages: 2, page: 1, concurrency_limit: 10 })
        expect(res.body.queues.map((q) => [q.queue_name, q.active_slots, q.flow_run_count, q.flow_runs.length])).toEqual([
          ["AA", 2, 2, 1],
          ["AB", 2, 2, 1]
        ])
        expect(res.body.queues[0].flow_runs[0]).toMatchObject({ state_type: expect.stringMatching(/PENDING|RUNNING/), time_in_current_state: expect.any(Number) })
        const missing = yield* request("POST", "/work_pools/nowhere/concurrency_status", { body: {} })
        expect(missing.body).toEqual({ detail: "Work pool 'nowhere' not found." })
      })
    )
  })
})
