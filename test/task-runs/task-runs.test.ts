import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { FlowRun } from "../../src/flow-runs/schemas.ts"
import { TaskRun } from "../../src/task-runs/schemas.ts"
import { idOf, makeFlow, ok, okAs, once } from "../support/api.ts"
import { clientOf, type Json, request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

/** A flow run in the given state, to hold task runs. */
const flowRunIn = (name: string, type: "PENDING" | "RUNNING") =>
  Effect.gen(function* () {
    const run = okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: yield* makeFlow(name) } }))
    if (type === "RUNNING") yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "RUNNING" } } })
    return run.id
  })

const newTask = (body: Record<string, unknown>) => Effect.map(request("POST", "/task_runs/", { body }), (res) => okAs(TaskRun, res))
const readTask = (id: string) => Effect.flatMap(clientOf("taskRuns"), (taskRuns) => taskRuns.read({ path: { id } }))
const setState = (id: string, state: Record<string, unknown>) => request("POST", `/task_runs/${id}/set_state`, { body: { state } })
/** How long an answered state waits: from its timestamp to its scheduled time. */
const delayOf = (answer: { readonly body: Json }) =>
  Date.parse(answer.body.state.state_details.scheduled_time as string) - Date.parse(answer.body.state.timestamp as string)

/** A task run, extract 0 tagged t, of a running flow run. */
const extractTask = (flowName: string) =>
  Effect.gen(function* () {
    const flowRunId = yield* flowRunIn(flowName, "RUNNING")
    const body = { flow_run_id: flowRunId, task_key: "extract", dynamic_key: "0", tags: ["t"] }
    return { flowRunId, body, created: yield* request("POST", "/task_runs/", { body }) }
  })

/** A flaky task run (2 retries, 3 then 7 seconds apart) of a running flow run, started. */
const flakyTask = (flowName: string) =>
  Effect.gen(function* () {
    const flowRunId = yield* flowRunIn(flowName, "RUNNING")
    const task = yield* newTask({ flow_run_id: flowRunId, task_key: "flaky", dynamic_key: "0", empirical_policy: { retries: 2, retry_delay: [3, 7] } })
    yield* TestClock.adjust("1 second")
    expect((yield* setState(task.id, { type: "RUNNING" })).body.status).toBe("ACCEPT")
    yield* TestClock.adjust("1 second")
    return task.id
  })

/** A task run that failed for good after two retries: its id. */
const failedForGood = (flowName: string) =>
  Effect.gen(function* () {
    const id = yield* flakyTask(flowName)
    for (const wait of ["3 seconds", "7 seconds"] as const) {
      yield* setState(id, { type: "FAILED" })
      yield* TestClock.adjust(wait)
      yield* setState(id, { type: "RUNNING" })
      yield* TestClock.adjust("1 second")
    }
    expect((yield* setState(id, { type: "FAILED" })).body).toMatchObject({ status: "ACCEPT", state: { type: "FAILED" } })
    return id
  })

/** A running flow run with a task run that completed with the cache key key-1. */
const cached = (flowName: string) =>
  Effect.gen(function* () {
    const flowRunId = yield* flowRunIn(flowName, "RUNNING")
    const first = yield* newTask({ flow_run_id: flowRunId, task_key: "c", dynamic_key: "0" })
    yield* setState(first.id, { type: "RUNNING" })
    const done = yield* setState(first.id, { type: "COMPLETED", data: { type: "reference", storage_key: "k" }, state_details: { cache_key: "key-1" } })
    expect(done.body.status).toBe("ACCEPT")
    return flowRunId
  })

describe("task runs", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    describe("create, read, rename and delete", () => {
      it.effect("creates a task run (201) Pending, with the reference's policy and its flow run's labels", () =>
        Effect.gen(function* () {
          const { flowRunId, created } = yield* extractTask("tasks-create")
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
          expect(created.body.labels).toMatchObject({ "prefect.flow-run.id": flowRunId, "prefect.flow.id": expect.any(String) })
        }))

      it.effect("repeats by flow run, task key and dynamic key (200, the same task run)", () =>
        Effect.gen(function* () {
          const { body, created } = yield* extractTask("tasks-repeat")
          const again = yield* request("POST", "/task_runs/", { body })
          expect(again.status).toBe(200)
          expect(again.body.id).toBe(created.body.id)
        }))

      it.effect("refuses a body without a dynamic key (422) and a flow run that does not exist (409)", () =>
        Effect.gen(function* () {
          const { body } = yield* extractTask("tasks-refused")
          expect((yield* request("POST", "/task_runs/", { body: { task_key: "x" } })).body.detail[0]).toMatchObject({
            loc: ["body", "dynamic_key"],
            type: "missing"
          })
          expect((yield* request("POST", "/task_runs/", { body: { ...body, dynamic_key: "1", flow_run_id: MISSING } })).status).toBe(409)
        }))

      it.effect("renames one with PATCH (204)", () =>
        Effect.gen(function* () {
          const { created } = yield* extractTask("tasks-rename")
          expect((yield* request("PATCH", `/task_runs/${created.body.id}`, { body: { name: "extract-1" } })).status).toBe(204)
          expect((yield* readTask(idOf(created.body))).name).toBe("extract-1")
        }))

      it.effect("reads an unknown one as 404 'Task not found'", () =>
        Effect.gen(function* () {
          expect((yield* request("GET", `/task_runs/${MISSING}`)).body).toEqual({ detail: "Task not found" })
        }))

      it.effect("deletes one (204); once it is gone, 404", () =>
        Effect.gen(function* () {
          const { created } = yield* extractTask("tasks-delete")
          expect((yield* request("DELETE", `/task_runs/${created.body.id}`)).status).toBe(204)
          expect((yield* request("DELETE", `/task_runs/${created.body.id}`)).status).toBe(404)
        }))
    })

    describe("runs", () => {
      it.effect("only inside a running flow run: the flow run being Pending, running the task aborts", () =>
        Effect.gen(function* () {
          const pendingFlowRun = yield* flowRunIn("tasks-stopped", "PENDING")
          const task = yield* newTask({ flow_run_id: pendingFlowRun, task_key: "t", dynamic_key: "0" })
          const res = yield* setState(task.id, { type: "RUNNING" })
          expect(res.body).toMatchObject({
            status: "ABORT",
            details: { reason: "The enclosing flow must be running to begin task execution." },
            state: { type: "PENDING" }
          })
        }))

      it.effect("without a flow run, freely", () =>
        Effect.gen(function* () {
          const orphan = yield* newTask({ task_key: "free", dynamic_key: "0" })
          expect((yield* setState(orphan.id, { type: "RUNNING" })).body.status).toBe("ACCEPT")
        }))
    })

    describe("retries", () => {
      it.effect("a failure waits the first retry delay in AwaitingRetry, then reruns as Retrying", () =>
        Effect.gen(function* () {
          const id = yield* flakyTask("tasks-retry")
          const first = yield* setState(id, { type: "FAILED" })
          expect(first.body).toMatchObject({ status: "REJECT", details: { reason: "Retrying" }, state: { name: "AwaitingRetry" } })
          expect(delayOf(first)).toBe(3000)
          yield* TestClock.adjust("3 seconds")
          const rerun = yield* setState(id, { type: "RUNNING" })
          expect(rerun.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING", name: "Retrying" } })
        }))

      it.effect("the n-th failure waits the n-th retry delay", () =>
        Effect.gen(function* () {
          const id = yield* flakyTask("tasks-retry-second")
          yield* setState(id, { type: "FAILED" })
          yield* TestClock.adjust("3 seconds")
          yield* setState(id, { type: "RUNNING" })
          yield* TestClock.adjust("1 second")
          expect(delayOf(yield* setState(id, { type: "FAILED" }))).toBe(7000)
        }))

      it.effect("retries spent, a failure is accepted; the history holds each state, each readable alone, and three runs", () =>
        Effect.gen(function* () {
          const id = yield* failedForGood("tasks-retry-spent")
          const history = (yield* request("GET", `/task_run_states/?task_run_id=${id}`)).body
          expect(history.map((s) => s.name)).toEqual(["Pending", "Running", "AwaitingRetry", "Retrying", "AwaitingRetry", "Retrying", "Failed"])
          expect((yield* request("GET", `/task_run_states/${history[1].id}`)).body).toEqual(history[1])
          expect((yield* readTask(id)).run_count).toBe(3)
        }))

      it.effect("forced back to Running out of Failed, a task counts its runs afresh", () =>
        Effect.gen(function* () {
          const id = yield* failedForGood("tasks-retry-afresh")
          yield* TestClock.adjust("1 second")
          yield* setState(id, { type: "SCHEDULED" })
          const rerun = yield* setState(id, { type: "RUNNING" })
          expect(rerun.body).toMatchObject({ status: "ACCEPT", state: { name: "Running" } })
          expect((yield* readTask(id)).run_count).toBe(1)
        }))
    })

    describe("the cache", () => {
      it.effect("a task run with the cache key of a completed one takes its state: Cached", () =>
        Effect.gen(function* () {
          const flowRunId = yield* cached("tasks-cache")
          const second = yield* newTask({ flow_run_id: flowRunId, task_key: "c", dynamic_key: "1" })
          const hit = yield* setState(second.id, { type: "RUNNING", state_details: { cache_key: "key-1" } })
          expect(hit.body).toMatchObject({
            status: "REJECT",
            details: { reason: "Retrieved state from cache" },
            state: { type: "COMPLETED", name: "Cached", data: { storage_key: "k" } }
          })
        }))

      it.effect("refresh_cache runs it anyway", () =>
        Effect.gen(function* () {
          const flowRunId = yield* cached("tasks-cache-refresh")
          const third = yield* newTask({ flow_run_id: flowRunId, task_key: "c", dynamic_key: "2" })
          const refresh = yield* setState(third.id, { type: "RUNNING", state_details: { cache_key: "key-1", refresh_cache: true } })
          expect(refresh.body.status).toBe("ACCEPT")
        }))

      it.effect("a cache key longer than 2000 characters is refused", () =>
        Effect.gen(function* () {
          const flowRunId = yield* flowRunIn("tasks-cache-long", "RUNNING")
          const task = yield* newTask({ flow_run_id: flowRunId, task_key: "c", dynamic_key: "0" })
          yield* setState(task.id, { type: "RUNNING" })
          const tooLong = yield* setState(task.id, { type: "COMPLETED", state_details: { cache_key: "x".repeat(2001) } })
          expect(tooLong.body.details.reason).toBe("Cache key exceeded maximum allowed length of 2000 characters.")
        }))
    })

    describe("filter, count, paginate and history", () => {
      /** load-1 and load-2 of flow run a, save-1 of flow run b, a second apart; read only. */
      const tasks = once(
        Effect.gen(function* () {
          const a = yield* flowRunIn("tasks-filter-a", "RUNNING")
          const b = yield* flowRunIn("tasks-filter-b", "RUNNING")
          for (const [flowRunId, key] of [[a, "load-1"], [a, "load-2"], [b, "save-1"]] as const) {
            yield* request("POST", "/task_runs/", { body: { flow_run_id: flowRunId, task_key: key, dynamic_key: "0", name: key } })
            yield* TestClock.adjust("1 second")
          }
          return { a, mine: { flow_runs: { id: { any_: [a, b] } } } }
        })
      )
      const names = (body: Record<string, unknown>) =>
        Effect.map(request("POST", "/task_runs/filter", { body }), (res) => ok(res, 200).map((t) => t.name))
      const filters: Array<readonly [string, (a: string) => Record<string, unknown>, boolean, Array<string>]> = [
        ["sorted by name", () => ({ sort: "NAME_ASC" }), true, ["load-1", "load-2", "save-1"]],
        ["sorted by id descending", () => ({ sort: "ID_DESC" }), true, ["save-1", "load-2", "load-1"]],
        ["by their flow run, sorted by name descending", (a) => ({ task_runs: { flow_run_id: { any_: [a] } }, sort: "NAME_DESC" }), false, ["load-2", "load-1"]],
        ["by a name like", () => ({ task_runs: { name: { like_: "save" } } }), true, ["save-1"]],
        ["by their flow's name", () => ({ flows: { name: { any_: ["tasks-filter-b"] } } }), true, ["save-1"]],
        ["by having no subflow runs", () => ({ task_runs: { subflow_runs: { exists_: false } }, sort: "NAME_ASC" }), true, ["load-1", "load-2", "save-1"]],
        ["by state type", () => ({ task_runs: { state: { type: { any_: ["RUNNING"] } } } }), true, []]
      ]
      for (const [title, body, scoped, expected] of filters) {
        it.effect(`filters ${title}`, () =>
          Effect.gen(function* () {
            const { a, mine } = yield* tasks
            expect(yield* names({ ...(scoped ? mine : {}), ...body(a) })).toEqual(expected)
          }))
      }

      it.effect("counts the matching task runs", () =>
        Effect.gen(function* () {
          const { mine } = yield* tasks
          expect((yield* request("POST", "/task_runs/count", { body: mine })).body).toBe(3)
        }))

      it.effect("paginates: count, pages, page and that page's task runs", () =>
        Effect.gen(function* () {
          const { mine } = yield* tasks
          const page = yield* request("POST", "/task_runs/paginate", { body: { ...mine, sort: "NAME_ASC", limit: 2, page: 2 } })
          expect(page.body).toMatchObject({ count: 3, pages: 2, page: 2 })
          expect(page.body.results.map((t) => t.name)).toEqual(["save-1"])
        }))

      it.effect("counts them per interval and state in the history", () =>
        Effect.gen(function* () {
          // All three were created Pending within the first seconds of the test clock.
          const { mine } = yield* tasks
          const history = yield* request("POST", "/task_runs/history", {
            body: { ...mine, history_start: "1970-01-01T00:00:00Z", history_end: "1970-01-02T00:00:00Z", history_interval_seconds: 86400 }
          })
          expect(history.status).toBe(200)
          expect(history.body).toHaveLength(1)
          expect(history.body[0].states).toEqual([expect.objectContaining({ state_type: "PENDING", count_runs: 3 })])
        }))
    })
  })
})
