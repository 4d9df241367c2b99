import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { FlowRun } from "../../src/flow-runs/schemas.ts"
import { EventPersister } from "../../src/events/persister.ts"
import { TaskRunRecorder } from "../../src/task-runs/recorder.ts"
import { makeFlow, ok, okAs } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

let counter = 0
const id = (prefix: string) => `${prefix}-0000-4000-8000-${String(++counter).padStart(12, "0")}`

/** A task run state change as a client running the task itself sends it. */
const clientEvent = (taskRunId: string, flowRunId: string | null, state: { type: string; name: string }, at: string, run: Record<string, unknown> = {}) => ({
  id: id("77777777"),
  occurred: at,
  event: `prefect.task-run.${state.name}`,
  resource: {
    "prefect.resource.id": `prefect.task-run.${taskRunId}`,
    "prefect.resource.name": "add-1",
    "prefect.state-name": state.name,
    "prefect.state-type": state.type,
    "prefect.orchestration": "client"
  },
  related: flowRunId ? [{ "prefect.resource.id": `prefect.flow-run.${flowRunId}`, "prefect.resource.role": "flow-run" }] : [],
  payload: {
    intended: { from: null, to: state.type },
    initial_state: null,
    validated_state: { type: state.type, name: state.name, message: "", state_details: {} },
    task_run: { name: "add-1", task_key: "add", dynamic_key: "1", tags: ["t"], run_count: state.type === "RUNNING" ? 1 : 0, ...run }
  }
})

const record = (...events: Array<unknown>) =>
  Effect.gen(function* () {
    expect((yield* request("POST", "/events", { body: events })).status).toBe(204)
    // Into the event log, then the recorder follows it.
    yield* Effect.flatMap(EventPersister, (persister) => persister.drain)
    yield* Effect.flatMap(TaskRunRecorder, (recorder) => recorder.drain)
  })

/** A flow run and a task run of it recorded from a client's Pending and Running events, on 24 November 2026. */
const recorded = (flowName: string) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(Date.UTC(2026, 10, 24, 10, 0, 0))
    const flowId = yield* makeFlow(flowName)
    const flowRun = okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } }), 201)
    const taskRunId = id("88888888")
    yield* record(
      clientEvent(taskRunId, flowRun.id, { type: "PENDING", name: "Pending" }, "2026-11-24T09:59:00Z"),
      clientEvent(taskRunId, flowRun.id, { type: "RUNNING", name: "Running" }, "2026-11-24T09:59:01Z")
    )
    return { flowRunId: flowRun.id, taskRunId }
  })

/** A client's Running event of a task run of no flow run, on 24 November 2026. */
const runningAlone = Effect.gen(function* () {
  yield* TestClock.setTime(Date.UTC(2026, 10, 24, 10, 0, 0))
  const taskRunId = id("88888888")
  return { taskRunId, event: clientEvent(taskRunId, null, { type: "RUNNING", name: "Running" }, "2026-11-24T09:59:10Z") }
})

describe("the task run recorder", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("records a client-orchestrated task run and its states from its events", () =>
      Effect.gen(function* () {
        const { flowRunId, taskRunId } = yield* recorded("client-side")
        const run = ok(yield* request("GET", `/task_runs/${taskRunId}`), 200)
        expect(run).toMatchObject({ name: "add-1", flow_run_id: flowRunId, task_key: "add", dynamic_key: "1", tags: ["t"], run_count: 1 })
        expect(run.state).toMatchObject({ type: "RUNNING", name: "Running" })
        expect(run.state.state_details).toMatchObject({ task_run_id: taskRunId, flow_run_id: flowRunId })
      }))

    it.effect("an older event arriving late adds its state but does not take the run back: the newest state wins", () =>
      Effect.gen(function* () {
        const { flowRunId, taskRunId } = yield* recorded("client-side-late")
        yield* record(
          clientEvent(taskRunId, flowRunId, { type: "COMPLETED", name: "Completed" }, "2026-11-24T09:59:05Z"),
          clientEvent(taskRunId, flowRunId, { type: "SCHEDULED", name: "Scheduled" }, "2026-11-24T09:58:59Z")
        )
        expect(ok(yield* request("GET", `/task_runs/${taskRunId}`), 200).state.type).toBe("COMPLETED")
        const states = ok(yield* request("GET", `/task_run_states/?task_run_id=${taskRunId}`), 200)
        expect(states.map((s) => s.type).sort()).toEqual(["COMPLETED", "PENDING", "RUNNING", "SCHEDULED"])
      }))

    it.effect("the same task (flow run, task key, dynamic key) under another id is the same run", () =>
      Effect.gen(function* () {
        const { flowRunId, taskRunId } = yield* recorded("client-side-again")
        const again = id("88888888")
        yield* record(clientEvent(again, flowRunId, { type: "FAILED", name: "Failed" }, "2026-11-24T09:59:09Z"))
        expect((yield* request("GET", `/task_runs/${again}`)).status).toBe(404)
        expect(ok(yield* request("GET", `/task_runs/${taskRunId}`), 200).state.type).toBe("FAILED")
      }))

    it.effect("events of task runs the server orchestrates are not recorded", () =>
      Effect.gen(function* () {
        const { taskRunId, event } = yield* runningAlone
        yield* record({ ...event, id: id("77777777"), resource: { ...event.resource, "prefect.orchestration": "server" } })
        expect((yield* request("GET", `/task_runs/${taskRunId}`)).status).toBe(404)
      }))

    it.effect("events without a task run are not recorded", () =>
      Effect.gen(function* () {
        const { taskRunId, event } = yield* runningAlone
        yield* record({ ...event, id: id("77777777"), payload: { validated_state: { type: "RUNNING" } } })
        expect((yield* request("GET", `/task_runs/${taskRunId}`)).status).toBe(404)
      }))

    it.effect("a task run of no flow run is recorded on its own", () =>
      Effect.gen(function* () {
        const { taskRunId, event } = yield* runningAlone
        yield* record(event)
        expect(ok(yield* request("GET", `/task_runs/${taskRunId}`), 200).flow_run_id).toBeNull()
      }))

    it.effect("a task run without a flow run is the same run as one with its task key and dynamic key", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.UTC(2026, 10, 25, 9, 0, 0))
        const keys = { task_key: "solo", dynamic_key: "7" }
        const known = ok(yield* request("POST", "/task_runs/", { body: keys }), 201)
        // Two ids for the task in one batch, neither the id the server gave it.
        const [first, second] = [id("88888888"), id("88888888")]
        yield* record(
          clientEvent(first, null, { type: "RUNNING", name: "Running" }, "2026-11-25T09:59:01Z", keys),
          clientEvent(second, null, { type: "COMPLETED", name: "Completed" }, "2026-11-25T09:59:02Z", keys)
        )
        expect((yield* request("GET", `/task_runs/${first}`)).status).toBe(404)
        expect((yield* request("GET", `/task_runs/${second}`)).status).toBe(404)
        const run = ok(yield* request("GET", `/task_runs/${known.id}`), 200)
        expect(run).toMatchObject({ flow_run_id: null, ...keys, state: { type: "COMPLETED" } })
        const states = ok(yield* request("GET", `/task_run_states/?task_run_id=${known.id}`), 200)
        expect(states.map((s) => s.type).sort()).toEqual(["COMPLETED", "PENDING", "RUNNING"])
      }))

    it.effect("two new ids of a task without a flow run in one batch make one run, under the first one's id", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.UTC(2026, 10, 25, 9, 0, 0))
        const other = { task_key: "solo", dynamic_key: "8" }
        const [third, fourth] = [id("88888888"), id("88888888")]
        yield* record(
          clientEvent(fourth, null, { type: "COMPLETED", name: "Completed" }, "2026-11-25T09:59:04Z", other),
          clientEvent(third, null, { type: "RUNNING", name: "Running" }, "2026-11-25T09:59:03Z", other)
        )
        expect(ok(yield* request("GET", `/task_runs/${third}`), 200)).toMatchObject({ ...other, state: { type: "COMPLETED" } })
        expect((yield* request("GET", `/task_runs/${fourth}`)).status).toBe(404)
      }))
  })
})
