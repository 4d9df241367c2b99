import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { FlowRun } from "../../src/flow-runs/schemas.ts"
import { makeFlow, ok, okAs } from "../support/api.ts"
import { clientOf, request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const newRun = (flowName: string, body: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const flowId = yield* makeFlow(flowName)
    return okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, ...body } }), 201)
  })

const readRun = (id: string) => Effect.flatMap(clientOf("flowRuns"), (flowRuns) => flowRuns.read({ path: { id } }))

/** A run with the inputs answer-1 ('{"ok": true}') and, a second later, answer-2 ("two", from "me"). */
const runWithInputs = (flowName: string) =>
  Effect.gen(function* () {
    const run = yield* newRun(flowName)
    const created = yield* request("POST", `/flow_runs/${run.id}/input`, { body: { key: "answer-1", value: '{"ok": true}' } })
    yield* TestClock.adjust("1 second")
    yield* request("POST", `/flow_runs/${run.id}/input`, { body: { key: "answer-2", value: "two", sender: "me" } })
    return { run, created }
  })
const inputKeys = (runId: string, body: Record<string, unknown>) =>
  Effect.map(request("POST", `/flow_runs/${runId}/input/filter`, { body }), (res) => ok(res, 200).map((i) => i.key))

const at = (hours: number) => new Date(Date.UTC(2030, 0, 1, hours)).toISOString()

describe("flow run labels, inputs, lateness, history and bulk state", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    describe("labels", () => {
      it.effect("PATCH labels merges over the run's labels", () =>
        Effect.gen(function* () {
          const run = yield* newRun("labels", { labels: { a: "1", b: "2" } })
          const res = yield* request("PATCH", `/flow_runs/${run.id}/labels`, { body: { b: "changed", c: 3 } })
          expect(res.status).toBe(204)
          expect((yield* readRun(run.id)).labels).toEqual({ ...run.labels, a: "1", b: "changed", c: 3 })
        }))

      it.effect("PATCH labels of an unknown run is 404", () =>
        Effect.gen(function* () {
          expect((yield* request("PATCH", `/flow_runs/${MISSING}/labels`, { body: {} })).status).toBe(404)
        }))

      it.effect("PATCH labels refuses values that are not scalars, so the run stays readable", () =>
        Effect.gen(function* () {
          const run = yield* newRun("labels-scalar", { labels: { a: "1" } })
          const res = yield* request("PATCH", `/flow_runs/${run.id}/labels`, { body: { b: ["x"], c: { d: 1 } } })
          expect(res.status).toBe(422)
          expect(res.body.detail.map((i) => i.loc)).toEqual([["body", "b"], ["body", "c"]])
          const after = yield* request("GET", `/flow_runs/${run.id}`)
          expect(after.status).toBe(200)
          expect(after.body.labels).toEqual(run.labels)
          // A task run inherits its flow run's labels: they must still be labels.
          const task = yield* request("POST", "/task_runs/", { body: { flow_run_id: run.id, task_key: "t", dynamic_key: "0" } })
          expect(task.status).toBe(201)
        }))
    })

    describe("inputs", () => {
      it.effect("stores an input (201, a null body) and reads it back as the text it was given", () =>
        Effect.gen(function* () {
          const { run, created } = yield* runWithInputs("inputs-read")
          expect(created.status).toBe(201)
          expect(created.body).toBeNull()
          const read = yield* request("GET", `/flow_runs/${run.id}/input/answer-1`)
          expect(read.status).toBe(200)
          expect(read.headers.get("content-type")).toContain("text/plain")
          expect(read.text).toBe('{"ok": true}')
        }))

      it.effect("refuses a key the run has (409), an unknown run (404) and a key that is not a slug (422)", () =>
        Effect.gen(function* () {
          const { run } = yield* runWithInputs("inputs-refused")
          const duplicate = yield* request("POST", `/flow_runs/${run.id}/input`, { body: { key: "answer-1", value: "x" } })
          expect(duplicate.status).toBe(409)
          expect(duplicate.body).toEqual({ detail: "A flow run input with this key already exists." })
          expect((yield* request("POST", `/flow_runs/${MISSING}/input`, { body: { key: "k", value: "v" } })).status).toBe(404)
          expect((yield* request("POST", `/flow_runs/${run.id}/input`, { body: { key: "Bad Key", value: "v" } })).status).toBe(422)
        }))

      it.effect("filters by prefix, oldest first, one by default", () =>
        Effect.gen(function* () {
          const { run } = yield* runWithInputs("inputs-filter")
          const filtered = yield* request("POST", `/flow_runs/${run.id}/input/filter`, { body: { prefix: "answer", limit: 5 } })
          expect(filtered.body.map((i) => i.key)).toEqual(["answer-1", "answer-2"])
          expect(filtered.body[1]).toMatchObject({ flow_run_id: run.id, value: "two", sender: "me" })
          expect(yield* inputKeys(run.id, { prefix: "answer" })).toEqual(["answer-1"])
        }))

      it.effect("filters out the keys it is told to exclude", () =>
        Effect.gen(function* () {
          const { run } = yield* runWithInputs("inputs-exclude")
          expect(yield* inputKeys(run.id, { prefix: "answer", limit: 5, exclude_keys: ["answer-1"] })).toEqual(["answer-2"])
        }))

      it.effect("a negative limit is the client's mistake (422), not a server error", () =>
        Effect.gen(function* () {
          // The database refuses it.
          const { run } = yield* runWithInputs("inputs-negative")
          const negative = yield* request("POST", `/flow_runs/${run.id}/input/filter`, { body: { prefix: "answer", limit: -1 } })
          expect(negative.status).toBe(422)
          expect(negative.body.detail).toMatch(/^Invalid input: /)
        }))

      it.effect("deletes an input (204); once it is gone, reading or deleting it is 404", () =>
        Effect.gen(function* () {
          const { run } = yield* runWithInputs("inputs-delete")
          expect((yield* request("DELETE", `/flow_runs/${run.id}/input/answer-1`)).status).toBe(204)
          const gone = yield* request("GET", `/flow_runs/${run.id}/input/answer-1`)
          expect(gone.status).toBe(404)
          expect(gone.body).toEqual({ detail: "Flow run input not found" })
          expect((yield* request("DELETE", `/flow_runs/${run.id}/input/answer-1`)).status).toBe(404)
        }))
    })

    describe("lateness", () => {
      it.effect("averages the lateness of the matching runs", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("late")
          const ids: Array<string> = []
          for (let late = 0; late < 5; late++) {
            ids.push(okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "SCHEDULED" } } })).id)
            yield* TestClock.adjust("1 second")
          }
          // Start them all now: the first was expected 5 s ago, the last 1 s ago.
          for (const id of ids) yield* request("POST", `/flow_runs/${id}/set_state`, { body: { state: { type: "RUNNING" } } })
          const all = yield* request("POST", "/flow_runs/lateness", { body: { flows: { name: { any_: ["late"] } } } })
          expect(all.status).toBe(200)
          expect(all.body).toBeCloseTo(3, 1)
          const two = yield* request("POST", "/flow_runs/lateness", { body: { flow_runs: { id: { any_: ids.slice(0, 2) } } } })
          expect(two.body).toBeCloseTo(4.5, 1)
        }))

      it.effect("is null when no run matches", () =>
        Effect.gen(function* () {
          const none = yield* request("POST", "/flow_runs/lateness", { body: { flow_runs: { id: { any_: [MISSING] } } } })
          expect(none.body).toBeNull()
        }))
    })

    describe("history", () => {
      it.effect("counts runs per interval of expected start and per state", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("history")
          for (const [hours, type] of [[1, "SCHEDULED"], [2, "SCHEDULED"], [2, "SCHEDULED"], [30, "SCHEDULED"]] as const) {
            yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type, state_details: { scheduled_time: at(hours) } } } })
          }
          const res = yield* request("POST", "/flow_runs/history", {
            body: { history_start: at(0), history_end: at(48), history_interval_seconds: 86400, flows: { name: { any_: ["history"] } } }
          })
          expect(res.status).toBe(200)
          expect(res.body).toHaveLength(2)
          expect(res.body[0]).toMatchObject({ interval_start: at(0), interval_end: at(24) })
          expect(res.body[0].states).toEqual([
            { state_type: "SCHEDULED", state_name: "Scheduled", count_runs: 3, sum_estimated_run_time: 0, sum_estimated_lateness: 0 }
          ])
          expect(res.body[1].states[0].count_runs).toBe(1)
        }))

      it.effect("answers at most 500 intervals", () =>
        Effect.gen(function* () {
          const minutes = yield* request("POST", "/flow_runs/history", { body: { history_start: at(0), history_end: at(240), history_interval_seconds: 60 } })
          expect(minutes.body).toHaveLength(500)
        }))

      it.effect("refuses an interval under a second (422)", () =>
        Effect.gen(function* () {
          const bad = yield* request("POST", "/flow_runs/history", { body: { history_start: at(0), history_end: at(1), history_interval_seconds: 0.5 } })
          expect(bad.status).toBe(422)
          expect(bad.body).toEqual({ detail: "History interval must not be less than 1 second." })
        }))

      for (const path of ["/flow_runs/history", "/task_runs/history"]) {
        it.effect(`${path}: an interval whose first bucket would end past the year 9999 is 422, having no date to answer with`, () =>
          Effect.gen(function* () {
            const huge = yield* request("POST", path, { body: { history_start: at(0), history_end: at(1), history_interval_seconds: 3.4e38 } })
            expect(huge.status).toBe(422)
            expect(huge.body).toEqual({ detail: "History interval is too large." })
          }))

        it.effect(`${path}: a last bucket that would end past the year 9999 ends at the last instant there is`, () =>
          Effect.gen(function* () {
            const untilTheEnd = yield* request("POST", path, {
              body: { history_start: at(0), history_end: "9999-12-31T23:59:59.999Z", history_interval_seconds: 2 ** 31 }
            })
            expect(untilTheEnd.status).toBe(200)
            const buckets = untilTheEnd.body
            expect(buckets[buckets.length - 1].interval_end).toBe("9999-12-31T23:59:59.999Z")
            expect(buckets[buckets.length - 2].interval_end).toBe(new Date(Date.parse(at(0)) + (buckets.length - 1) * 2 ** 31 * 1000).toISOString())
          }))
      }
    })

    describe("bulk_set_state", () => {
      it.effect("sets the state of every matching run, each through the policy", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("bulk")
          const scheduled = okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "SCHEDULED" }, tags: ["bulk"] } }))
          const running = okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "RUNNING" }, tags: ["bulk"] } }))
          const res = yield* request("POST", "/flow_runs/bulk_set_state", { body: { flow_runs: { tags: { all_: ["bulk"] } }, state: { type: "CANCELLING" } } })
          expect(res.status).toBe(200)
          const byRun = Object.fromEntries(res.body.results.map((r) => [r.flow_run_id as string, r]))
          expect(byRun[scheduled.id]).toMatchObject({ status: "REJECT", state: { type: "CANCELLED" } })
          expect(byRun[running.id]).toMatchObject({ status: "ACCEPT", state: { type: "CANCELLING" } })
        }))

      it.effect("answers no results when no run matches", () =>
        Effect.gen(function* () {
          const none = yield* request("POST", "/flow_runs/bulk_set_state", { body: { flow_runs: { id: { any_: [MISSING] } }, state: { type: "CANCELLED" } } })
          expect(none.body).toEqual({ results: [] })
        }))
    })
  })
})
