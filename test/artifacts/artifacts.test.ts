import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { makeDeployment, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"
const TASK_RUN = "22222222-2222-4222-8222-222222222222"

const create = (body: Record<string, unknown>) =>
  Effect.gen(function* () {
    // Versions of a key are told apart by when they were made.
    yield* TestClock.adjust(Duration.millis(5))
    return ok(yield* request("POST", "/artifacts/", { body }), 201)
  })
const keysOf = (route: string, body: Record<string, unknown>) =>
  Effect.map(request("POST", route, { body }), (res) => ok(res, 200).map((a) => a.key))

describe("artifacts", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("creates (201), reads, filters and counts by key, type, runs, flows and deployments", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("art-flow")
        const dep = yield* makeDeployment({ name: "art-dep", flow_id: flowId })
        const run = ok(yield* request("POST", `/deployments/${dep.id}/create_flow_run`, { body: {} }))
        const description = "# This is a markdown description title"
        const a1 = yield* create({ key: "artifact-1", data: 1, type: "table", description, flow_run_id: run.id, task_run_id: TASK_RUN })
        yield* create({ key: "artifact-2", data: 2, type: "markdown", description, flow_run_id: run.id })
        yield* create({ key: "artifact-3", type: "result", description })
        yield* create({ key: "artifact-4", description })
        yield* create({ data: 1, description })
        expect(a1).toMatchObject({ key: "artifact-1", data: 1, type: "table", flow_run_id: run.id, task_run_id: TASK_RUN, metadata_: null })
        expect(ok(yield* request("GET", `/artifacts/${a1.id}`), 200)).toEqual(a1)
        expect((yield* request("GET", `/artifacts/${MISSING}`)).body).toEqual({ detail: "Artifact not found." })

        const scope = (artifacts: Record<string, unknown>) => ({ artifacts: { ...artifacts } })
        expect(yield* keysOf("/artifacts/filter", {})).toEqual([null, "artifact-4", "artifact-3", "artifact-2", "artifact-1"])
        expect(yield* keysOf("/artifacts/filter", scope({ key: { any_: ["artifact-1", "artifact-2"] } }))).toEqual(["artifact-2", "artifact-1"])
        expect(yield* keysOf("/artifacts/filter", scope({ key: { exists_: false } }))).toEqual([null])
        expect(yield* keysOf("/artifacts/filter", scope({ key: { like_: "1" } }))).toEqual(["artifact-1"])
        expect(yield* keysOf("/artifacts/filter", scope({ type: { not_any_: ["result"] } }))).toEqual(["artifact-2", "artifact-1"])
        expect(yield* keysOf("/artifacts/filter", scope({ flow_run_id: { any_: [run.id] }, task_run_id: { any_: [TASK_RUN] } }))).toEqual(["artifact-1"])
        expect(yield* keysOf("/artifacts/filter", { flows: { name: { any_: ["art-flow"] } } })).toEqual(["artifact-2", "artifact-1"])
        expect(yield* keysOf("/artifacts/filter", { deployments: { id: { any_: [dep.id] } } })).toEqual(["artifact-2", "artifact-1"])
        expect(yield* keysOf("/artifacts/filter", { sort: "KEY_ASC", limit: 2 })).toEqual([null, "artifact-1"])
        expect(yield* keysOf("/artifacts/filter", { sort: "CREATED_DESC", offset: 1 })).toEqual(["artifact-4", "artifact-3", "artifact-2", "artifact-1"])
        expect((yield* request("POST", "/artifacts/count", { body: { flow_runs: { id: { any_: [run.id] } } } })).body).toBe(2)
        expect((yield* request("POST", "/artifacts/count", { body: {} })).body).toBe(5)

        const bad = yield* request("POST", "/artifacts/", { body: { key: "camelCase_Key" } })
        expect(bad.status).toBe(422)
        expect(bad.body.detail[0].msg).toContain("Artifact key must only contain lowercase letters, numbers, and dashes.")
        const long = yield* create({ key: "meta", metadata_: { note: "x".repeat(600) } })
        expect(long.metadata_.note).toBe(`${"x".repeat(500)}...`)
        expect((yield* request("POST", "/artifacts/", { body: { metadata_: { n: 1 } } })).status).toBe(422)
      })
    )

    it.effect("keeps the latest artifact of each key, through updates and deletes", () =>
      Effect.gen(function* () {
        const v1 = yield* create({ key: "versioned", data: 1, type: "table" })
        const v2 = yield* create({ key: "versioned", data: 2, type: "table" })
        const v3 = yield* create({ key: "versioned", data: 3, type: "table" })
        yield* create({ key: "other", data: 9, type: "result" })
        const latest = () => Effect.map(request("GET", "/artifacts/versioned/latest"), (res) => ok(res, 200))
        expect(yield* latest()).toMatchObject({ key: "versioned", data: 3 })
        const collections = ok(yield* request("POST", "/artifacts/latest/filter", { body: { artifacts: { key: { any_: ["versioned", "other"] } } } }), 200)
        expect(collections.map((c) => [c.key, c.latest_id]).sort()).toEqual([["other", expect.any(String)], ["versioned", v3.id]].sort())
        expect((yield* request("POST", "/artifacts/latest/count", { body: { artifacts: { key: { any_: ["versioned", "other"] }, type: { any_: ["table"] } } } })).body).toBe(1)

        // Editing the latest edits its key's record; editing an older one does not.
        expect((yield* request("PATCH", `/artifacts/${v3.id}`, { body: { data: { new: "data" } } })).status).toBe(204)
        expect((yield* latest()).data).toEqual({ new: "data" })
        yield* request("PATCH", `/artifacts/${v1.id}`, { body: { description: "old" } })
        expect((yield* latest()).description).toBeNull()
        yield* TestClock.adjust(Duration.millis(5))
        const before = ok(yield* request("GET", `/artifacts/${v2.id}`), 200)
        expect((yield* request("PATCH", `/artifacts/${v2.id}`, { body: {} })).status).toBe(204)
        const after = ok(yield* request("GET", `/artifacts/${v2.id}`), 200)
        expect(after.data).toBe(2)
        expect(Date.parse(after.updated as string)).toBeGreaterThan(Date.parse(before.updated as string))
        expect((yield* request("PATCH", `/artifacts/${MISSING}`, { body: {} })).status).toBe(404)
        expect((yield* request("PATCH", `/artifacts/${v2.id}`, { body: { key: "renamed" } })).status).toBe(422)

        // Deleting an older version leaves the latest; deleting the latest makes the newest left latest.
        expect((yield* request("DELETE", `/artifacts/${v1.id}`)).status).toBe(204)
        expect((yield* latest()).data).toEqual({ new: "data" })
        yield* request("DELETE", `/artifacts/${v3.id}`)
        expect(yield* latest()).toMatchObject({ data: 2, created: v2.created })
        yield* request("DELETE", `/artifacts/${v2.id}`)
        expect((yield* request("GET", "/artifacts/versioned/latest")).status).toBe(404)
        expect((yield* request("DELETE", `/artifacts/${v2.id}`)).status).toBe(404)
      })
    )

    it.effect("a flow run's graph lists its artifacts (results aside), the latest marked", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("art-graph")
        const run = ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } }))
        yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "RUNNING" } } })
        const task = ok(yield* request("POST", "/task_runs/", { body: { flow_run_id: run.id, task_key: "t", dynamic_key: "0" } }))
        yield* request("POST", `/task_runs/${task.id}/set_state`, { body: { state: { type: "RUNNING" } } })
        const old = yield* create({ key: "report", type: "markdown", data: "# v1", flow_run_id: run.id })
        const current = yield* create({ key: "report", type: "markdown", data: "# v2", flow_run_id: run.id })
        const progress = yield* create({ type: "progress", data: 50, flow_run_id: run.id, task_run_id: task.id })
        yield* create({ type: "result", data: 1, flow_run_id: run.id })
        const graph = ok(yield* request("GET", `/flow_runs/${run.id}/graph-v2`), 200)
        expect(graph.artifacts.map((a) => [a.id, a.is_latest, a.data])).toEqual([[old.id, false, null], [current.id, true, null]])
        const node = graph.nodes.find(([id]) => id === task.id)![1]
        expect(node.artifacts).toEqual([{ id: progress.id, created: progress.created, key: null, type: "progress", is_latest: false, data: 50 }])
      })
    )
  })
})
