import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { dashboardBuckets } from "../../src/ui/buckets.ts"
import { idOf, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const URL = "/ui/task_runs/dashboard/counts"
const NOW = Date.UTC(2023, 5, 1, 18)
const EIGHT_HOURS_AGO = NOW - 8 * 3_600_000
const window = { start_time: { after_: new Date(EIGHT_HOURS_AGO).toISOString(), before_: new Date(NOW).toISOString() } }

const zeros = Array.from({ length: 20 }, () => ({ completed: 0, failed: 0 }))

describe("/ui/task_runs/dashboard/counts", () => {
  it("splits the span from after_'s minute to the end of before_'s minute into 20 buckets, rounded as the reference", () => {
    // 8 h 0 min 59.999999 s in 20: 1442.99999995 s, to the microsecond half to even.
    expect(dashboardBuckets(new Date(EIGHT_HOURS_AGO + 30_500), new Date(NOW + 1_000), new Date(0))).toEqual({
      count: 20,
      startUs: BigInt(EIGHT_HOURS_AGO) * 1000n,
      widthUs: 1_443_000_000n
    })
    // Without before_: to the end of the current minute (1 min 59.999999 s in 20: 5.99999995 s, rounded up).
    expect(dashboardBuckets(new Date(NOW), undefined, new Date(NOW + 90_000))?.widthUs).toBe(6_000_000n)
    expect(dashboardBuckets(new Date(NOW), new Date(NOW - 120_000), new Date(0))).toBeUndefined()
  })

  it.layer(testServer(), { timeout: 120_000 })((it) => {
    it.effect("requires task_runs.start_time.after_ (422)", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", URL, { body: { task_runs: {} } })
        expect(res.status).toBe(422)
        expect(res.body).toEqual({ detail: "task_runs.start_time.after_ is required" })
        const before = yield* request("POST", URL, { body: { task_runs: { start_time: { before_: window.start_time.before_ } } } })
        expect(before.body).toEqual({ detail: "task_runs.start_time.after_ is required" })
        const missing = yield* request("POST", URL, { body: {} })
        expect(missing.status).toBe(422)
        expect(missing.body.detail).toEqual([expect.objectContaining({ loc: ["body", "task_runs"], type: "missing" })])
      })
    )

    it.effect("answers 20 empty buckets when no task run matches", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", URL, { body: { task_runs: window } })
        expect(res.status).toBe(200)
        expect(res.body).toEqual(zeros)
      })
    )

    it.effect("counts finished task runs per bucket of start time: Failed and Crashed as failed, the others as completed", () =>
      Effect.gen(function* () {
        const flow = yield* makeFlow("dashboard")
        yield* TestClock.setTime(EIGHT_HOURS_AGO - 60_000)
        const flowRun = ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flow } }), 201)
        ok(yield* request("POST", `/flow_runs/${flowRun.id}/set_state`, { body: { state: { type: "RUNNING" } } }), 201)
        // 100 task runs started over the 8 hours, every other one failed.
        const gapMs = (NOW - EIGHT_HOURS_AGO) / 100
        const tasks: Array<string> = []
        for (let i = 0; i < 100; i++) {
          yield* TestClock.setTime(EIGHT_HOURS_AGO + i * gapMs)
          const body = { flow_run_id: flowRun.id, task_key: `task-${i}`, dynamic_key: String(i), state: { type: "RUNNING" } }
          tasks.push(idOf(ok(yield* request("POST", "/task_runs/", { body }), 201)))
        }
        yield* TestClock.setTime(NOW)
        yield* Effect.forEach(tasks, (id, i) =>
          Effect.map(
            request("POST", `/task_runs/${id}/set_state`, { body: { state: { type: i % 2 === 0 ? "COMPLETED" : "FAILED" } } }),
            (res) => expect(ok(res, 201).status).toBe("ACCEPT")
          ), { concurrency: 8 })
        // Unfinished task runs in the window are not counted.
        ok(yield* request("POST", "/task_runs/", {
          body: { flow_run_id: flowRun.id, task_key: "still-running", dynamic_key: "0", state: { type: "RUNNING" } }
        }), 201)

        const res = yield* request("POST", URL, { body: { task_runs: window } })
        expect(res.status).toBe(200)
        const expected = [[3, 3], [3, 2], [2, 3], [3, 2], [2, 3], [3, 2], [2, 3], [3, 2], [2, 3], [3, 2], [2, 3], [3, 2], [2, 3], [3, 2], [2, 3], [3, 2], [2, 3], [3, 2], [2, 3], [2, 2]]
        expect(res.body).toEqual(expected.map(([completed, failed]) => ({ completed, failed })))

        // A state filter given is replaced by the final states; the other filters apply.
        const stateless = yield* request("POST", URL, {
          body: { task_runs: { ...window, state: { type: { any_: ["RUNNING"] } } }, flows: { name: { any_: ["dashboard"] } } }
        })
        expect(stateless.body).toEqual(res.body)
        const otherFlow = yield* request("POST", URL, { body: { task_runs: window, flows: { name: { any_: ["other"] } } } })
        expect(otherFlow.body).toEqual(zeros)
        const noQueue = yield* request("POST", URL, { body: { task_runs: window, work_queues: { name: { any_: ["q"] } } } })
        expect(noQueue.body).toEqual(zeros)

        // Without before_, the buckets run to the end of the current minute (now: NOW).
        const toNow = yield* request("POST", URL, { body: { task_runs: { start_time: { after_: window.start_time.after_ } } } })
        expect(toNow.body).toEqual(res.body)
      }), 120_000
    )
  })
})
