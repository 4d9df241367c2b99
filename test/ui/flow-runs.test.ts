import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { FlowRun } from "../../src/flow-runs/schemas.ts"
import { TaskRun } from "../../src/task-runs/schemas.ts"
import { idOf, makeFlow, ok, okAs, once } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const setState = (id: string, type: string) =>
  Effect.map(request("POST", `/flow_runs/${id}/set_state`, { body: { state: { type } } }), (res) => ok(res, 201))

const readRun = (id: string) => Effect.map(request("GET", `/flow_runs/${id}`), (res) => ok(res, 200))

describe("/ui/flow_runs", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    /** The reference's fixture: two finished runs of one flow, a running one of another; a second apart. */
    const seeded = once(
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.UTC(2026, 2, 1))
        const flow = yield* makeFlow("history-flow")
        const flow2 = yield* makeFlow("another-test")
        const ids: Array<string> = []
        for (const [flowId, final] of [[flow, "COMPLETED"], [flow, "FAILED"], [flow2, null]] as const) {
          const run = okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } }), 201)
          yield* TestClock.adjust("1 second")
          yield* setState(run.id, "RUNNING")
          yield* TestClock.adjust("1 second")
          if (final !== null) yield* setState(run.id, final)
          ids.push(run.id)
        }
        yield* TestClock.adjust("10 seconds")
        return { ids, flow, flow2 }
      })
    )
    const history = (body?: Record<string, unknown>) =>
      Effect.zipRight(seeded, request("POST", "/ui/flow_runs/history", body === undefined ? {} : { body }))
    const stateTypes = (body: Record<string, unknown>) => Effect.map(history(body), (res) => ok(res, 200).map((r) => r.state_type))

    it.effect("history answers every run by default (no body), newest expected start first", () =>
      Effect.gen(function* () {
        const { ids } = yield* seeded
        const res = yield* history()
        expect(res.status).toBe(200)
        expect(res.body).toHaveLength(3)
        // EXPECTED_START_TIME_DESC: the last created first.
        expect(res.body.map((r) => r.id)).toEqual([...ids].reverse())
        expect(Object.keys(res.body[0])).toEqual(["id", "state_type", "timestamp", "duration", "lateness"])
      })
    )

    it.effect("history answers each run's state, start (or expected start), run time and lateness", () =>
      Effect.gen(function* () {
        const res = yield* history({ sort: "ID_DESC" })
        expect(res.status).toBe(200)
        const runs = yield* Effect.forEach(res.body.map(idOf), readRun)
        expect(runs.map((r) => r.id)).toEqual([...runs.map((r) => r.id)].sort().reverse())
        res.body.forEach((simple, i) => {
          const run = runs[i]!
          expect(simple).toEqual({
            id: run.id,
            state_type: run.state_type,
            timestamp: run.start_time ?? run.expected_start_time,
            duration: run.estimated_run_time,
            lateness: run.estimated_start_time_delta
          })
        })
        // Started a second after expected; the running one has run for 11 seconds so far.
        expect(res.body.map((r) => [r.state_type, r.duration, r.lateness])).toEqual([
          ["RUNNING", 11, 1],
          ["FAILED", 1, 1],
          ["COMPLETED", 1, 1]
        ])
      })
    )

    const filters: Array<readonly [string, Record<string, unknown>, Array<string>]> = [
      ["filters by flow as flow run queries do", { flows: { name: { any_: ["history-flow"] } } }, ["FAILED", "COMPLETED"]],
      ["filters by state, sorted as asked", { flow_runs: { state: { type: { any_: ["RUNNING", "FAILED"] } } }, sort: "EXPECTED_START_TIME_ASC" }, ["FAILED", "RUNNING"]],
      ["pages with limit and offset, null criteria taken as none", { limit: 1, offset: 1, flows: null, deployments: null }, ["FAILED"]],
      ["answers nothing when nothing matches", { work_pools: { name: { any_: ["nowhere"] } } }, []]
    ]
    for (const [title, body, expected] of filters) {
      it.effect(`history ${title}`, () => Effect.map(stateTypes(body), (found) => expect(found).toEqual(expected)))
    }

    it.effect("history refuses a limit over 1000 (422), takes 1000", () =>
      Effect.gen(function* () {
        const tooMany = yield* history({ limit: 1001 })
        expect(tooMany.status).toBe(422)
        expect(tooMany.body.detail).toEqual([expect.objectContaining({ loc: ["body", "limit"], type: "less_than_equal", ctx: { le: 1000 } })])
        expect((yield* history({ limit: 1000 })).status).toBe(200)
      })
    )

    it.effect("history refuses a negative offset, an unknown sort and an unknown filter field (422)", () =>
      Effect.gen(function* () {
        expect((yield* history({ offset: -1 })).body.detail).toEqual([expect.objectContaining({ loc: ["body", "offset"], type: "greater_than_equal" })])
        expect((yield* history({ sort: "SIDEWAYS" })).status).toBe(422)
        const extra = yield* history({ flow_runs: { nope: 1 } })
        expect(extra.body.detail).toEqual([expect.objectContaining({ loc: ["body", "flow_runs", "nope"], type: "extra_forbidden" })])
      })
    )

    /** A flow run with three task runs, and another flow run without any. */
    const withTasks = (flowName: string) =>
      Effect.gen(function* () {
        const flow = yield* makeFlow(flowName)
        const flowRun = okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: flow } }), 201)
        const other = okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: flow } }), 201)
        for (let i = 0; i < 3; i++) {
          ok(yield* request("POST", "/task_runs/", { body: { flow_run_id: flowRun.id, name: `dummy-${i}`, task_key: `dummy-${i}`, dynamic_key: `dummy-${i}` } }), 201)
        }
        return { flow, flowRun, other }
      })

    it.effect("count-task-runs counts each flow run's task runs", () =>
      Effect.gen(function* () {
        const { flowRun } = yield* withTasks("count-task-runs")
        const res = yield* request("POST", "/ui/flow_runs/count-task-runs", { body: { flow_run_ids: [flowRun.id] } })
        expect(res.status).toBe(200)
        expect(res.body).toEqual({ [flowRun.id]: 3 })
      })
    )

    it.effect("count-task-runs leaves out a task run standing for a subflow, and answers 0 for runs without any or unknown, in the order asked", () =>
      Effect.gen(function* () {
        const { flow, flowRun, other } = yield* withTasks("count-subflow")
        // A task run that started a subflow run is the subflow's, not a task of its own.
        const parent = okAs(TaskRun, yield* request("POST", "/task_runs/", { body: { flow_run_id: flowRun.id, task_key: "sub", dynamic_key: "0" } }), 201)
        ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flow, parent_task_run_id: parent.id } }), 201)
        const counted = yield* request("POST", "/ui/flow_runs/count-task-runs", { body: { flow_run_ids: [other.id, flowRun.id, MISSING] } })
        expect(counted.text).toBe(JSON.stringify({ [other.id]: 0, [flowRun.id]: 3, [MISSING]: 0 }))
      })
    )

    it.effect("count-task-runs refuses a body without flow_run_ids (422)", () =>
      Effect.gen(function* () {
        const missing = yield* request("POST", "/ui/flow_runs/count-task-runs", { body: { flow_ids: [MISSING] } })
        expect(missing.status).toBe(422)
        expect(missing.body.detail).toEqual([expect.objectContaining({ loc: ["body", "flow_run_ids"], type: "missing" })])
      })
    )
  })
})
