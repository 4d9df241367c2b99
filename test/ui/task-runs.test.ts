import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { FlowRun } from "../../src/flow-runs/schemas.ts"
import { makeFlow, ok, okAs, once } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const zero = {
  COMPLETED: 0,
  PENDING: 0,
  RUNNING: 0,
  FAILED: 0,
  CANCELLED: 0,
  CRASHED: 0,
  PAUSED: 0,
  CANCELLING: 0,
  SCHEDULED: 0
}

/** The states of each flow run's 27 task runs, as the reference's fixture has them. */
const STATES: ReadonlyArray<readonly [string, number]> = [
  ["COMPLETED", 9],
  ["FAILED", 6],
  ["SCHEDULED", 3],
  ["RUNNING", 3],
  ["CANCELLED", 2],
  ["CRASHED", 1],
  ["PAUSED", 1],
  ["CANCELLING", 1],
  ["PENDING", 1]
]

describe("/ui/task_runs", () => {
  it.layer(testServer(), { timeout: 120_000 })((it) => {
    it.effect("count answers every state type, 0 without task runs (the reference's key order)", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/ui/task_runs/count")
        expect(res.status).toBe(200)
        expect(res.text).toBe(JSON.stringify(zero))
      })
    )

    /** Flow runs Completed, Failed and Pending, each with the reference's 27 task runs; read only. */
    const counted = once(
      Effect.gen(function* () {
        const flow = yield* makeFlow("count-by-state")
        const flowRuns: Array<string> = []
        for (const type of ["COMPLETED", "FAILED", "PENDING"]) {
          const run = okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: flow, state: { type } } }), 201)
          flowRuns.push(run.id)
          const states = STATES.flatMap(([state, count]) => Array.from({ length: count }, () => state))
          yield* Effect.forEach(states, (state, i) => {
            const body = { flow_run_id: run.id, task_key: `task-${i}`, dynamic_key: String(i), state: { type: state } }
            return Effect.map(request("POST", "/task_runs/", { body }), (res) => expect(ok(res, 201).state_type).toBe(state))
          }, { concurrency: 8 })
        }
        return flowRuns
      })
    )
    const count = (body?: Record<string, unknown>) =>
      Effect.zipRight(counted, request("POST", "/ui/task_runs/count", body === undefined ? {} : { body }))

    it.effect("count counts task runs per state type, in the reference's key order", () =>
      Effect.gen(function* () {
        const all = yield* count()
        expect(all.body).toEqual(Object.fromEntries(STATES.map(([state, count]) => [state, count * 3])))
        expect(Object.keys(all.body)).toEqual(Object.keys(zero))
      }), 120_000)

    it.effect("count filters by the flow runs' state, as task run queries do", () =>
      Effect.gen(function* () {
        const ofCompletedFlowRuns = yield* count({ flow_runs: { state: { type: { any_: ["COMPLETED"] } } } })
        expect(ofCompletedFlowRuns.status).toBe(200)
        expect(ofCompletedFlowRuns.body).toEqual(Object.fromEntries(STATES))
      }), 120_000)

    it.effect("count filters by flow run id and task run state", () =>
      Effect.gen(function* () {
        const flowRuns = yield* counted
        const byId = yield* count({ flow_runs: { id: { any_: [flowRuns[1]] } }, task_runs: { state: { type: { any_: ["FAILED", "CRASHED"] } } } })
        expect(byId.body).toEqual({ ...zero, FAILED: 6, CRASHED: 1 })
      }), 120_000)

    it.effect("count answers zeros when nothing matches", () =>
      Effect.gen(function* () {
        expect((yield* count({ flows: { name: { any_: ["nothing"] } }, deployments: null })).body).toEqual(zero)
      }), 120_000)

    it.effect("count refuses a criterion there is not (422)", () =>
      Effect.gen(function* () {
        expect((yield* request("POST", "/ui/task_runs/count", { body: { task_runs: { bogus: 1 } } })).status).toBe(422)
      }))

    it.effect("GET /ui/task_runs/{id} answers the task run with its flow run's name", () =>
      Effect.gen(function* () {
        const flow = yield* makeFlow("read-ui-task-run")
        const flowRun = ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flow, name: "my-flow-run" } }), 201)
        const task = ok(
          yield* request("POST", "/task_runs/", { body: { flow_run_id: flowRun.id, task_key: "t", dynamic_key: "0" } }),
          201
        )
        const res = yield* request("GET", `/ui/task_runs/${task.id}`)
        expect(res.status).toBe(200)
        const plain: Record<string, unknown> = ok(yield* request("GET", `/task_runs/${task.id}`), 200)
        expect(res.body).toEqual({ ...plain, flow_run_name: "my-flow-run" })
        expect(Object.keys(res.body)).toEqual([...Object.keys(plain), "flow_run_name"])
        expect(res.body).toMatchObject({ id: task.id, flow_run_id: flowRun.id })
      })
    )

    it.effect("GET /ui/task_runs/{id} of a task run without a flow run: null flow run id and name", () =>
      Effect.gen(function* () {
        const task = ok(yield* request("POST", "/task_runs/", { body: { task_key: "alone", dynamic_key: "0" } }), 201)
        const res = yield* request("GET", `/ui/task_runs/${task.id}`)
        expect(res.status).toBe(200)
        expect(res.body).toMatchObject({ id: task.id, flow_run_id: null, flow_run_name: null })
      })
    )

    it.effect("GET /ui/task_runs/{id} of no task run: 404", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", `/ui/task_runs/${MISSING}`)
        expect(res.status).toBe(404)
        expect(res.body).toEqual({ detail: "Task not found" })
        expect((yield* request("GET", "/ui/task_runs/not-a-uuid")).status).toBe(404)
      })
    )
  })
})
