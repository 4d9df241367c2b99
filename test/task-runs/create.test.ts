/**
 * Creating a task run, in the reference's terms (tests/server/orchestration/api/test_task_runs.py,
 * TestCreateTaskRun): the same task answers the existing run with 200, whether or not it has a flow
 * run; a client-chosen id that another task run has answers 409.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { idOf, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const INTEGRITY_CONFLICT = {
  detail: "Data integrity conflict. This usually means a unique or foreign key constraint was violated. See server logs for details."
}

let counter = 0
const clientId = () => `c1e0c1e0-0000-4000-8000-${String(++counter).padStart(12, "0")}`

const flowRun = (name: string) =>
  Effect.gen(function* () {
    const flowId = yield* makeFlow(name)
    return idOf(ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } }), 201))
  })

const create = (body: Record<string, unknown>) => request("POST", "/task_runs/", { body })

/** The task runs without a flow run that have `name`. */
const withoutFlowRunNamed = (name: string) =>
  Effect.map(
    request("POST", "/task_runs/filter", { body: { task_runs: { flow_run_id: { is_null_: true }, name: { any_: [name] } } } }),
    (res) => ok(res, 200)
  )

describe("task run create", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("without a flow run, the same task key and dynamic key answer the existing run with 200", () =>
      Effect.gen(function* () {
        const body = { flow_run_id: null, task_key: "my-task-key", name: "my-cool-task-run-name", dynamic_key: "0" }
        const created = ok(yield* create(body), 201)
        expect(created).toMatchObject({ flow_run_id: null, name: "my-cool-task-run-name", task_key: "my-task-key", dynamic_key: "0" })
        expect(ok(yield* request("GET", `/task_runs/${created.id}`), 200).flow_run_id).toBeNull()

        // Posting the same data twice is an upsert.
        const again = ok(yield* create(body), 200)
        expect(again.id).toBe(created.id)
        // Under another client id too: the existing run answers and no run has that id.
        const otherId = clientId()
        expect(ok(yield* create({ ...body, id: otherId }), 200).id).toBe(created.id)
        expect((yield* request("GET", `/task_runs/${otherId}`)).status).toBe(404)
        expect(yield* withoutFlowRunNamed("my-cool-task-run-name")).toHaveLength(1)

        // Another dynamic key, or the same keys in a flow run, is another task.
        expect(ok(yield* create({ ...body, dynamic_key: "1" }), 201).id).not.toBe(created.id)
        const inFlowRun = ok(yield* create({ ...body, flow_run_id: yield* flowRun("keys") }), 201)
        expect(inFlowRun.id).not.toBe(created.id)
      }))

    it.effect("concurrent creates without a flow run and with the same keys make one run", () =>
      Effect.gen(function* () {
        const body = { task_key: "raced", dynamic_key: "0", name: "raced-run" }
        const answers = yield* Effect.all(Array.from({ length: 8 }, () => create(body)), { concurrency: "unbounded" })
        expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201])
        expect(new Set(answers.map((a) => a.body.id)).size).toBe(1)
        expect(yield* withoutFlowRunNamed("raced-run")).toHaveLength(1)
      }))

    it.effect("a create racing the deletion of the run it repeats answers that run or a new one, never 500", () =>
      Effect.gen(function* () {
        const body = { flow_run_id: null, task_key: "raced", dynamic_key: "0" }
        const statuses = new Set<number>()
        for (let round = 0; round < 30; round++) {
          const existing = ok(yield* create(body))
          const answers = yield* Effect.all(
            [request("DELETE", `/task_runs/${existing.id}`), create(body), create(body)],
            { concurrency: "unbounded" }
          )
          for (const answer of answers) statuses.add(answer.status)
        }
        expect([...statuses].filter((status) => ![200, 201, 204, 404].includes(status))).toEqual([])
        // Whatever the interleavings, the task has one run again: the next create finds it.
        const last = ok(yield* create(body))
        expect(ok(yield* create(body), 200).id).toBe(last.id)
      })
    )

    it.effect("a client-provided id is used, and an id another task run has answers 409", () =>
      Effect.gen(function* () {
        const flowRunId = yield* flowRun("client-ids")
        const id = clientId()
        const body = { flow_run_id: flowRunId, task_key: "my-task-key", name: "my-cool-task-run-name", dynamic_key: "0", id }
        expect(ok(yield* create(body), 201).id).toBe(id)

        const clash = yield* create({ ...body, dynamic_key: "1" })
        expect(clash.status).toBe(409)
        expect(clash.body).toEqual(INTEGRITY_CONFLICT)
        // The run with that id is untouched, and no run was made for the other key.
        expect(ok(yield* request("GET", `/task_runs/${id}`), 200).dynamic_key).toBe("0")
        const keys = ok(yield* request("POST", "/task_runs/filter", { body: { flow_runs: { id: { any_: [flowRunId] } } } }), 200)
        expect(keys.map((r) => r.dynamic_key)).toEqual(["0"])
        // The same task under the same id is the upsert, not a clash.
        expect(ok(yield* create(body), 200).id).toBe(id)

        // Without a flow run alike; and an id is taken whichever task run has it.
        const free = clientId()
        expect(ok(yield* create({ task_key: "free", dynamic_key: "0", id: free }), 201).id).toBe(free)
        expect(yield* create({ task_key: "free", dynamic_key: "1", id: free })).toMatchObject({ status: 409, body: INTEGRITY_CONFLICT })
        expect(yield* create({ task_key: "elsewhere", dynamic_key: "0", id })).toMatchObject({ status: 409, body: INTEGRITY_CONFLICT })
        expect(yield* create({ flow_run_id: flowRunId, task_key: "elsewhere", dynamic_key: "0", id: free })).toMatchObject({
          status: 409,
          body: INTEGRITY_CONFLICT
        })
        // The server still serves.
        expect((yield* request("GET", "/health")).status).toBe(200)
      }))
  })
})
