/**
 * The runs a state names in its details are set by the server, on every path that writes a state
 * (the reference's UpdateStateDetails and UpdateSubflowStateDetails in its global policies, applied
 * to every transition and to the first state a run is created with): a task run's states name the
 * task run and its flow run; a flow run's states name the flow run and, for a subflow, its parent
 * task run.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { idOf, makeDeployment, makeFlow, ok } from "../support/api.ts"
import { type Json, request, testServer } from "../support/server.ts"

const OTHER_FLOW_RUN = "0ddf1000-0000-4000-8000-000000000001"
const OTHER_TASK_RUN = "0ddf1000-0000-4000-8000-000000000002"
/** The run ids a client might wrongly send. */
const wrong = { flow_run_id: OTHER_FLOW_RUN, task_run_id: OTHER_TASK_RUN }

const flowRunIn = (flowId: string, state?: Record<string, unknown>) =>
  Effect.map(
    request("POST", "/flow_runs/", { body: { flow_id: flowId, ...(state ? { state } : {}) } }),
    (res) => idOf(ok(res, 201))
  )

const statesOf = (kind: "flow_run" | "task_run", id: string) =>
  Effect.map(request("GET", `/${kind}_states/?${kind}_id=${id}`), (res) => ok(res, 200))

const links = (state: Json) => ({ flow_run_id: state.state_details.flow_run_id, task_run_id: state.state_details.task_run_id })

describe("state details set by the server", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("a task run's states name the task run and its flow run, whatever the client sent", () =>
      Effect.gen(function* () {
        const flowRunId = yield* flowRunIn(yield* makeFlow("details-tasks"))
        ok(yield* request("POST", `/flow_runs/${flowRunId}/set_state`, { body: { state: { type: "RUNNING" } } }), 201)
        const own = (taskRunId: string) => ({ flow_run_id: flowRunId, task_run_id: taskRunId })

        // The first state given at create.
        const task = ok(
          yield* request("POST", "/task_runs/", {
            body: { flow_run_id: flowRunId, task_key: "t", dynamic_key: "0", empirical_policy: { retries: 1 }, state: { type: "PENDING", state_details: wrong } }
          }),
          201
        )
        expect(links(task.state)).toEqual(own(idOf(task)))

        // A proposed state, the replacement a rule puts in its place, and a forced state.
        const running = ok(yield* request("POST", `/task_runs/${task.id}/set_state`, { body: { state: { type: "RUNNING", state_details: wrong } } }), 201)
        expect(running.status).toBe("ACCEPT")
        expect(links(running.state)).toEqual(own(idOf(task)))
        const failed = ok(yield* request("POST", `/task_runs/${task.id}/set_state`, { body: { state: { type: "FAILED", state_details: wrong } } }), 201)
        expect(failed).toMatchObject({ status: "REJECT", state: { name: "AwaitingRetry" } })
        expect(links(failed.state)).toEqual(own(idOf(task)))
        const forced = ok(
          yield* request("POST", `/task_runs/${task.id}/set_state`, { body: { state: { type: "COMPLETED", state_details: wrong }, force: true } }),
          201
        )
        expect(links(forced.state)).toEqual(own(idOf(task)))

        // Read back: the run's current state and every stored state.
        expect(links(ok(yield* request("GET", `/task_runs/${task.id}`), 200).state)).toEqual(own(idOf(task)))
        const stored = yield* statesOf("task_run", idOf(task))
        expect(stored.map((s) => s.type)).toEqual(["PENDING", "RUNNING", "SCHEDULED", "COMPLETED"])
        for (const state of stored) expect(links(state)).toEqual(own(idOf(task)))
        expect(links(ok(yield* request("GET", `/task_run_states/${stored[0].id}`), 200))).toEqual(own(idOf(task)))

        // The Pending state a task run starts in without one.
        const plain = ok(yield* request("POST", "/task_runs/", { body: { flow_run_id: flowRunId, task_key: "t", dynamic_key: "1" } }), 201)
        expect(links(plain.state)).toEqual(own(idOf(plain)))
      }))

    it.effect("a task run without a flow run names no flow run", () =>
      Effect.gen(function* () {
        const task = ok(
          yield* request("POST", "/task_runs/", { body: { task_key: "free", dynamic_key: "0", state: { type: "PENDING", state_details: wrong } } }),
          201
        )
        expect(links(task.state)).toEqual({ flow_run_id: null, task_run_id: task.id })
        const running = ok(yield* request("POST", `/task_runs/${task.id}/set_state`, { body: { state: { type: "RUNNING", state_details: wrong } } }), 201)
        expect(links(running.state)).toEqual({ flow_run_id: null, task_run_id: task.id })
        for (const state of yield* statesOf("task_run", idOf(task))) expect(links(state)).toEqual({ flow_run_id: null, task_run_id: task.id })
      }))

    it.effect("a subflow run's states name the flow run and its parent task run, on create, set_state and bulk set_state", () =>
      Effect.gen(function* () {
        const parentFlowRun = yield* flowRunIn(yield* makeFlow("details-parent"))
        const parentTask = ok(yield* request("POST", "/task_runs/", { body: { flow_run_id: parentFlowRun, task_key: "sub", dynamic_key: "0" } }), 201)
        const childFlow = yield* makeFlow("details-child")
        const child = ok(
          yield* request("POST", "/flow_runs/", {
            body: { flow_id: childFlow, parent_task_run_id: parentTask.id, state: { type: "PENDING", state_details: wrong } }
          }),
          201
        )
        const own = { flow_run_id: child.id, task_run_id: parentTask.id }
        expect(links(child.state)).toEqual(own)

        const running = ok(yield* request("POST", `/flow_runs/${child.id}/set_state`, { body: { state: { type: "RUNNING", state_details: wrong } } }), 201)
        expect(running.status).toBe("ACCEPT")
        expect(links(running.state)).toEqual(own)
        const bulk = ok(
          yield* request("POST", "/flow_runs/bulk_set_state", {
            body: { flow_runs: { id: { any_: [child.id] } }, state: { type: "COMPLETED", state_details: wrong }, force: true }
          }),
          200
        )
        expect(bulk.results).toHaveLength(1)
        expect(links(bulk.results[0].state)).toEqual(own)

        expect(links(ok(yield* request("GET", `/flow_runs/${child.id}`), 200).state)).toEqual(own)
        const stored = yield* statesOf("flow_run", idOf(child))
        expect(stored.map((s) => s.type)).toEqual(["PENDING", "RUNNING", "COMPLETED"])
        for (const state of stored) expect(links(state)).toEqual(own)

        // A subflow run of a deployment: its first, Scheduled state too.
        const deployment = yield* makeDeployment({ name: "details-sub", flow_id: childFlow })
        const fromDeployment = ok(
          yield* request("POST", `/deployments/${deployment.id}/create_flow_run`, { body: { parent_task_run_id: parentTask.id } }),
          201
        )
        expect(links(fromDeployment.state)).toEqual({ flow_run_id: fromDeployment.id, task_run_id: parentTask.id })
      }))

    it.effect("a flow run's states name the flow run, and keep the task run id a client gave when the run is not a subflow", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("details-flow")
        const run = ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "PENDING", state_details: wrong } } }), 201)
        expect(links(run.state)).toEqual({ flow_run_id: run.id, task_run_id: OTHER_TASK_RUN })
        const running = ok(yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "RUNNING", state_details: wrong } } }), 201)
        expect(links(running.state)).toEqual({ flow_run_id: run.id, task_run_id: OTHER_TASK_RUN })
        const plain = ok(yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "COMPLETED" } } }), 201)
        expect(links(plain.state)).toEqual({ flow_run_id: run.id, task_run_id: null })
      }))
  })
})
