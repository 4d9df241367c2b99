import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

/** A flow run in the given state, to hold task runs. */
const flowRunIn = (name: string, type: "PENDING" | "RUNNING") =>
  Effect.gen(function* () {
    const flowId = (yield* request("POST", "/flows/", { body: { name } })).body.id
    const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })).body
    if (type === "RUNNING") yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "RUNNING" } } })
    return run.id as string
  })

const setState = (id: string, state: Record<string, unknown>) =>
  request("POST", `/task_runs/${id}/set_state`, { body: { state } })

describe("task runs", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("creates (201), repeats by flow run, task key and dynamic key (200), reads, renames and deletes", () =>
      Effect.gen(function* () {
        const flowRunId = yield* flowRunIn("tasks-crud", "RUNNING")
        const body = { flow_run_id: flowRunId, task_key: "extract", dynamic_key: "0", tags: ["t"] }
        const created = yield* request("POST", "/task_runs/", { body })
        expect(created.status).toBe(201)
        expect(created.body).toMatchObject({
          flow_run_id: flowRunId,
          task_key: "extract",
          dynamic_key: "0",
          tags: ["t"],
          state_type: "PENDING",
          state: { type: "PENDING", state_details: { task_run_id: created.body.id } },
          empirical_policy: { max_retries: 0, retry_delay_seconds: 0, retries: null, retry_delay: null, retry_jitter_factor: null }
        })
        const again = yield* request("POST", "/task_runs/", { body })
        expect(again.status).toBe(200)
        expect(again.body.id).toBe(created.body.id)

        expect((yield* request("PATCH", `/task_runs/${created.body.id}`, { body: { name: "extract-1" } })).status).toBe(204)
        expect((yield* request("GET", `/task_runs/${created.body.id}`)).body.name).toBe("extract-1")
        expect((yield* request("GET", `/task_runs/${MISSING}`)).body).toEqual({ detail: "Task not found" })
        expect(created.body.labels).toMatchObject({ "prefect.flow-run.id": flowRunId, "prefect.flow.id": expect.any(String) })
        expect((yield* request("POST", "/task_runs/", { body: { task_key: "x" } })).body.detail[0]).toMatchObject({
          loc: ["body", "dynamic_key"],
          type: "missing"
        })
        expect((yield* request("POST", "/task_runs/", { body: { ...body, dynamic_key: "1", flow_run_id: MISSING } })).status)
          .toBe(409)
        expect((yield* request("DELETE", `/task_runs/${created.body.id}`)).status).toBe(204)
        expect((yield* request("DELETE", `/task_runs/${created.body.id}`)).status).toBe(404)
      })
    )

    it.effect("runs only inside a running flow run", () =>
      Effect.gen(function* () {
        const pendingFlowRun = yield* flowRunIn("tasks-stopped", "PENDING")
        const task = (yield* request("POST", "/task_runs/", { body: { flow_run_id: pendingFlowRun, task_key: "t", dynamic_key: "0" } })).body
        const res = yield* setState(task.id, { type: "RUNNING" })
        expect(res.body).toMatchObject({
          status: "ABORT",
          details: { reason: "The enclosing flow must be running to begin task execution." },
          state: { type: "PENDING" }
        })
        const orphan = (yield* request("POST", "/task_runs/", { body: { task_key: "free", dynamic_key: "0" } })).body
        expect((yield* setState(orphan.id, { type: "RUNNING" })).body.status).toBe("ACCEPT")
      })
    )

    it.effect("retries with the n-th retry delay, then reruns as Retrying", () =>
      Effect.gen(function* () {
        const flowRunId = yield* flowRunIn("tasks-retry", "RUNNING")
        const task = (yield* request("POST", "/task_runs/", {
          body: { flow_run_id: flowRunId, task_key: "flaky", dynamic_key: "0", empirical_policy: { retries: 2, retry_delay: [3, 7] } }
        })).body
        yield* TestClock.adjust("1 second")
        expect((yield* setState(task.id, { type: "RUNNING" })).body.status).toBe("ACCEPT")
        yield* TestClock.adjust("1 second")
        const first = yield* setState(task.id, { type: "FAILED" })
        expect(first.body).toMatchObject({ status: "REJECT", details: { reason: "Retrying" }, state: { name: "AwaitingRetry" } })
        const wait = new Date(first.body.state.state_details.scheduled_time).getTime() - new Date(first.body.state.timestamp).getTime()
        expect(wait).toBe(3000)
        yield* TestClock.adjust("3 seconds")
        const rerun = yield* setState(task.id, { type: "RUNNING" })
        expect(rerun.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING", name: "Retrying" } })
        yield* TestClock.adjust("1 second")
        const second = yield* setState(task.id, { type: "FAILED" })
        expect(new Date(second.body.state.state_details.scheduled_time).getTime() - new Date(second.body.state.timestamp).getTime())
          .toBe(7000)
        yield* TestClock.adjust("7 seconds")
        yield* setState(task.id, { type: "RUNNING" })
        yield* TestClock.adjust("1 second")
        const last = yield* setState(task.id, { type: "FAILED" })
        expect(last.body).toMatchObject({ status: "ACCEPT", state: { type: "FAILED" } })
        const history = (yield* request("GET", `/task_run_states/?task_run_id=${task.id}`)).body
        expect(history.map((s: any) => s.name)).toEqual([
          "Pending", "Running", "AwaitingRetry", "Retrying", "AwaitingRetry", "Retrying", "Failed"
        ])
        expect((yield* request("GET", `/task_run_states/${history[1].id}`)).body).toEqual(history[1])
        expect((yield* request("GET", `/task_runs/${task.id}`)).body.run_count).toBe(3)
        // Forced back to Running out of Failed, the task counts its runs afresh.
        yield* TestClock.adjust("1 second")
        yield* request("POST", `/task_runs/${task.id}/set_state`, { body: { state: { type: "SCHEDULED" } } })
        const rerun2 = yield* setState(task.id, { type: "RUNNING" })
        expect(rerun2.body).toMatchObject({ status: "ACCEPT", state: { name: "Running" } })
        expect((yield* request("GET", `/task_runs/${task.id}`)).body.run_count).toBe(1)
      })
    )

    it.effect("reuses a cached completed state for the same cache key, unless asked to refresh", () =>
      Effect.gen(function* () {
        const flowRunId = yield* flowRunIn("tasks-cache", "RUNNING")
        const first = (yield* request("POST", "/task_runs/", { body: { flow_run_id: flowRunId, task_key: "c", dynamic_key: "0" } })).body
        yield* setState(first.id, { type: "RUNNING" })
        const done = yield* setState(first.id, {
          type: "COMPLETED",
          data: { type: "reference", storage_key: "k" },
          state_details: { cache_key: "key-1" }
        })
        expect(done.body.status).toBe("ACCEPT")
        const second = (yield* request("POST", "/task_runs/", { body: { flow_run_id: flowRunId, task_key: "c", dynamic_key: "1" } })).body
        const hit = yield* setState(second.id, { type: "RUNNING", state_details: { cache_key: "key-1" } })
        expect(hit.body).toMatchObject({
          status: "REJECT",
          details: { reason: "Retrieved state from cache" },
          state: { type: "COMPLETED", name: "Cached", data: { storage_key: "k" } }
        })
        const third = (yield* request("POST", "/task_runs/", { body: { flow_run_id: flowRunId, task_key: "c", dynamic_key: "2" } })).body
        const refresh = yield* setState(third.id, { type: "RUNNING", state_details: { cache_key: "key-1", refresh_cache: true } })
        expect(refresh.body.status).toBe("ACCEPT")
        const tooLong = yield* setState(third.id, { type: "COMPLETED", state_details: { cache_key: "x".repeat(2001) } })
        expect(tooLong.body.details.reason).toBe("Cache key exceeded maximum allowed length of 2000 characters.")
      })
    )

    it.effect("filters by task, flow run and flow criteria, counts and pages", () =>
      Effect.gen(function* () {
        const a = yield* flowRunIn("tasks-filter-a", "RUNNING")
        const b = yield* flowRunIn("tasks-filter-b", "RUNNING")
        for (const [flowRunId, key] of [[a, "load-1"], [a, "load-2"], [b, "save-1"]] as const) {
          yield* request("POST", "/task_runs/", { body: { flow_run_id: flowRunId, task_key: key, dynamic_key: "0", name: key } })
          yield* TestClock.adjust("1 second")
        }
        const names = (body: unknown) =>
          Effect.map(request("POST", "/task_runs/filter", { body }), (res) => res.body.map((t: any) => t.name))
        const mine = { flow_runs: { id: { any_: [a, b] } } }
        expect(yield* names({ ...mine, sort: "NAME_ASC" })).toEqual(["load-1", "load-2", "save-1"])
        expect(yield* names({ ...mine, sort: "ID_DESC" })).toEqual(["save-1", "load-2", "load-1"])
        expect(yield* names({ task_runs: { flow_run_id: { any_: [a] } }, sort: "NAME_DESC" })).toEqual(["load-2", "load-1"])
        expect(yield* names({ ...mine, task_runs: { name: { like_: "save" } } })).toEqual(["save-1"])
        expect(yield* names({ ...mine, flows: { name: { any_: ["tasks-filter-b"] } } })).toEqual(["save-1"])
        expect(yield* names({ ...mine, task_runs: { subflow_runs: { exists_: false } }, sort: "NAME_ASC" })).toEqual([
          "load-1", "load-2", "save-1"
        ])
        expect(yield* names({ ...mine, task_runs: { state: { type: { any_: ["RUNNING"] } } } })).toEqual([])
        expect((yield* request("POST", "/task_runs/count", { body: mine })).body).toBe(3)
        const page = yield* request("POST", "/task_runs/paginate", { body: { ...mine, sort: "NAME_ASC", limit: 2, page: 2 } })
        expect(page.body).toMatchObject({ count: 3, pages: 2, page: 2 })
        expect(page.body.results.map((t: any) => t.name)).toEqual(["save-1"])

        // All three were created Pending within the last few seconds of the test clock.
        const history = yield* request("POST", "/task_runs/history", {
          body: { ...mine, history_start: "1970-01-01T00:00:00Z", history_end: "1970-01-02T00:00:00Z", history_interval_seconds: 86400 }
        })
        expect(history.status).toBe(200)
        expect(history.body).toHaveLength(1)
        expect(history.body[0].states).toEqual([expect.objectContaining({ state_type: "PENDING", count_runs: 3 })])
      })
    )
  })
})
