import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { request, testServer } from "../support/server.ts"

const task = (flowRunId: string, key: string, task_inputs: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const created = (yield* request("POST", "/task_runs/", {
      body: { flow_run_id: flowRunId, task_key: key, dynamic_key: "0", name: key, task_inputs }
    })).body
    yield* TestClock.adjust("1 second")
    yield* request("POST", `/task_runs/${created.id}/set_state`, { body: { state: { type: "RUNNING" } } })
    return created.id as string
  })

describe("flow run graphs", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("list task runs with their dependencies (v1) and as nodes and edges (v2)", () =>
      Effect.gen(function* () {
        const flowId = (yield* request("POST", "/flows/", { body: { name: "graph" } })).body.id
        const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })).body
        yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "RUNNING" } } })
        const a = yield* task(run.id, "a")
        const b = yield* task(run.id, "b", { x: [{ input_type: "task_run", id: a }, { input_type: "task_run", id: a }] })
        const c = yield* task(run.id, "c", { __parents__: [{ input_type: "task_run", id: a }] })
        const d = yield* task(run.id, "d")
        const subflowId = (yield* request("POST", "/flows/", { body: { name: "child" } })).body.id
        const subflow = (yield* request("POST", "/flow_runs/", {
          body: { flow_id: subflowId, name: "kid", parent_task_run_id: d, state: { type: "RUNNING" } }
        })).body

        const v1 = yield* request("GET", `/flow_runs/${run.id}/graph`)
        expect(v1.status).toBe(200)
        const byName = Object.fromEntries(v1.body.map((e: any) => [e.name, e]))
        expect(byName.b.upstream_dependencies).toEqual([{ input_type: "task_run", id: a }])
        expect(byName.a.upstream_dependencies).toEqual([])
        expect(byName.a).toMatchObject({ id: a, untrackable_result: false, state: { type: "RUNNING" } })

        const v2 = yield* request("GET", `/flow_runs/${run.id}/graph-v2`)
        expect(v2.status).toBe(200)
        const nodes = Object.fromEntries(v2.body.nodes.map(([id, node]: [string, any]) => [id, node]))
        expect(nodes[a]).toMatchObject({ kind: "task-run", label: "a", children: [{ id: b }], parents: [] })
        expect(nodes[b].parents).toEqual([{ id: a }])
        expect(nodes[c]).toMatchObject({ parents: [], encapsulating: [{ id: a }] })
        expect(nodes[subflow.id]).toMatchObject({ kind: "flow-run", label: "child / kid", state_type: "RUNNING" })
        expect(nodes[d]).toBeUndefined()
        expect(v2.body.root_node_ids.sort()).toEqual([a, c, subflow.id].sort())
        expect(v2.body.states.map((s: any) => s.type)).toEqual(["PENDING", "RUNNING"])
        expect(v2.body.artifacts).toEqual([])

        expect((yield* request("GET", "/flow_runs/00000000-0000-4000-8000-000000000000/graph")).status).toBe(404)
        expect((yield* request("GET", "/flow_runs/00000000-0000-4000-8000-000000000000/graph-v2")).status).toBe(404)
      })
    )
  })
})
