import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { FlowRun } from "../../src/flow-runs/schemas.ts"
import { idOf, makeFlow, okAs, once } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const task = (flowRunId: string, key: string, task_inputs: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const created = (yield* request("POST", "/task_runs/", {
      body: { flow_run_id: flowRunId, task_key: key, dynamic_key: "0", name: key, task_inputs }
    })).body
    yield* TestClock.adjust("1 second")
    yield* request("POST", `/task_runs/${created.id}/set_state`, { body: { state: { type: "RUNNING" } } })
    return idOf(created)
  })

/**
 * A running flow run with task runs a; b, fed twice by a; c, a's child; d, which runs a subflow
 * (the flow child, its run kid).
 */
const graph = once(
  Effect.gen(function* () {
    const run = okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: yield* makeFlow("graph") } }))
    yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "RUNNING" } } })
    const a = yield* task(run.id, "a")
    const b = yield* task(run.id, "b", { x: [{ input_type: "task_run", id: a }, { input_type: "task_run", id: a }] })
    const c = yield* task(run.id, "c", { __parents__: [{ input_type: "task_run", id: a }] })
    const d = yield* task(run.id, "d")
    const subflow = okAs(
      FlowRun,
      yield* request("POST", "/flow_runs/", { body: { flow_id: yield* makeFlow("child"), name: "kid", parent_task_run_id: d, state: { type: "RUNNING" } } })
    )
    return { run, a, b, c, d, subflow }
  })
)

describe("flow run graphs", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("v1 lists the task runs with their upstream dependencies, each once", () =>
      Effect.gen(function* () {
        const { run, a } = yield* graph
        const v1 = yield* request("GET", `/flow_runs/${run.id}/graph`)
        expect(v1.status).toBe(200)
        const byName = Object.fromEntries(v1.body.map((e) => [e.name as string, e]))
        expect(byName.b!.upstream_dependencies).toEqual([{ input_type: "task_run", id: a }])
        expect(byName.a!.upstream_dependencies).toEqual([])
        expect(byName.a).toMatchObject({ id: a, untrackable_result: false, state: { type: "RUNNING" } })
      })
    )

    it.effect("v2 answers nodes and edges: children, parents, encapsulating runs and subflows; a task running a subflow is no node", () =>
      Effect.gen(function* () {
        const { run, a, b, c, d, subflow } = yield* graph
        const v2 = yield* request("GET", `/flow_runs/${run.id}/graph-v2`)
        expect(v2.status).toBe(200)
        const nodes = Object.fromEntries(v2.body.nodes.map(([id, node]) => [id as string, node]))
        expect(nodes[a]).toMatchObject({ kind: "task-run", label: "a", children: [{ id: b }], parents: [] })
        expect(nodes[b]!.parents).toEqual([{ id: a }])
        expect(nodes[c]).toMatchObject({ parents: [], encapsulating: [{ id: a }] })
        expect(nodes[subflow.id]).toMatchObject({ kind: "flow-run", label: "child / kid", state_type: "RUNNING" })
        expect(nodes[d]).toBeUndefined()
        expect([...v2.body.root_node_ids].sort()).toEqual([a, c, subflow.id].sort())
      })
    )

    it.effect("v2 answers the run's states and its artifacts", () =>
      Effect.gen(function* () {
        const { run } = yield* graph
        const v2 = yield* request("GET", `/flow_runs/${run.id}/graph-v2`)
        expect(v2.body.states.map((s) => s.type)).toEqual(["PENDING", "RUNNING"])
        expect(v2.body.artifacts).toEqual([])
      })
    )

    it.effect("both are 404 for an unknown run", () =>
      Effect.gen(function* () {
        expect((yield* request("GET", `/flow_runs/${MISSING}/graph`)).status).toBe(404)
        expect((yield* request("GET", `/flow_runs/${MISSING}/graph-v2`)).status).toBe(404)
      })
    )
  })
})
