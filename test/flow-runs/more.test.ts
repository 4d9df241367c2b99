import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const newRun = (flowName: string, body: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const flowId = (yield* request("POST", "/flows/", { body: { name: flowName } })).body.id
    return (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, ...body } })).body
  })

describe("flow run labels, inputs, lateness, history and bulk state", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("PATCH labels merges over the run's labels", () =>
      Effect.gen(function* () {
        const run = yield* newRun("labels", { labels: { a: "1", b: "2" } })
        const res = yield* request("PATCH", `/flow_runs/${run.id}/labels`, { body: { b: "changed", c: 3 } })
        expect(res.status).toBe(204)
        const after = (yield* request("GET", `/flow_runs/${run.id}`)).body
        expect(after.labels).toEqual({ ...run.labels, a: "1", b: "changed", c: 3 })
        expect((yield* request("PATCH", `/flow_runs/${MISSING}/labels`, { body: {} })).status).toBe(404)
      })
    )

    it.effect("PATCH labels refuses values that are not scalars, so the run stays readable", () =>
      Effect.gen(function* () {
        const run = yield* newRun("labels-scalar", { labels: { a: "1" } })
        const res = yield* request("PATCH", `/flow_runs/${run.id}/labels`, { body: { b: ["x"], c: { d: 1 } } })
        expect(res.status).toBe(422)
        expect(res.body.detail.map((i: any) => i.loc)).toEqual([["body", "b"], ["body", "c"]])
        const after = yield* request("GET", `/flow_runs/${run.id}`)
        expect(after.status).toBe(200)
        expect(after.body.labels).toEqual(run.labels)
        // A task run inherits its flow run's labels: they must still be labels.
        const task = yield* request("POST", "/task_runs/", { body: { flow_run_id: run.id, task_key: "t", dynamic_key: "0" } })
        expect(task.status).toBe(201)
      })
    )

    it.effect("stores, filters, reads and deletes run inputs", () =>
      Effect.gen(function* () {
        const run = yield* newRun("inputs")
        const created = yield* request("POST", `/flow_runs/${run.id}/input`, { body: { key: "answer-1", value: '{"ok": true}' } })
        expect(created.status).toBe(201)
        expect(created.body).toBeNull()
        yield* TestClock.adjust("1 second")
        yield* request("POST", `/flow_runs/${run.id}/input`, { body: { key: "answer-2", value: "two", sender: "me" } })
        const duplicate = yield* request("POST", `/flow_runs/${run.id}/input`, { body: { key: "answer-1", value: "x" } })
        expect(duplicate.status).toBe(409)
        expect(duplicate.body).toEqual({ detail: "A flow run input with this key already exists." })
        expect((yield* request("POST", `/flow_runs/${MISSING}/input`, { body: { key: "k", value: "v" } })).status).toBe(404)
        expect((yield* request("POST", `/flow_runs/${run.id}/input`, { body: { key: "Bad Key", value: "v" } })).status).toBe(422)

        const read = yield* request("GET", `/flow_runs/${run.id}/input/answer-1`)
        expect(read.status).toBe(200)
        expect(read.headers.get("content-type")).toContain("text/plain")
        expect(read.text).toBe('{"ok": true}')

        const filtered = yield* request("POST", `/flow_runs/${run.id}/input/filter`, { body: { prefix: "answer", limit: 5 } })
        expect(filtered.body.map((i: any) => i.key)).toEqual(["answer-1", "answer-2"])
        expect(filtered.body[1]).toMatchObject({ flow_run_id: run.id, value: "two", sender: "me" })
        const first = yield* request("POST", `/flow_runs/${run.id}/input/filter`, { body: { prefix: "answer" } })
        expect(first.body.map((i: any) => i.key)).toEqual(["answer-1"])
        const excluded = yield* request("POST", `/flow_runs/${run.id}/input/filter`, {
          body: { prefix: "answer", limit: 5, exclude_keys: ["answer-1"] }
        })
        expect(excluded.body.map((i: any) => i.key)).toEqual(["answer-2"])
        // A negative limit is the client's mistake (the database refuses it), not a server error.
        const negative = yield* request("POST", `/flow_runs/${run.id}/input/filter`, { body: { prefix: "answer", limit: -1 } })
        expect(negative.status).toBe(422)
        expect(negative.body.detail).toMatch(/^Invalid input: /)

        expect((yield* request("DELETE", `/flow_runs/${run.id}/input/answer-1`)).status).toBe(204)
        const gone = yield* request("GET", `/flow_runs/${run.id}/input/answer-1`)
        expect(gone.status).toBe(404)
        expect(gone.body).toEqual({ detail: "Flow run input not found" })
        expect((yield* request("DELETE", `/flow_runs/${run.id}/input/answer-1`)).status).toBe(404)
      })
    )

    it.effect("averages lateness over the matching runs, null when none match", () =>
      Effect.gen(function* () {
        const flowId = (yield* request("POST", "/flows/", { body: { name: "late" } })).body.id
        const ids: Array<string> = []
        for (let late = 0; late < 5; late++) {
          const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "SCHEDULED" } } })).body
          ids.push(run.id)
          yield* TestClock.adjust("1 second")
        }
        // Start them all now: the first was expected 5 s ago, the last 1 s ago.
        for (const id of ids) yield* request("POST", `/flow_runs/${id}/set_state`, { body: { state: { type: "RUNNING" } } })
        const all = yield* request("POST", "/flow_runs/lateness", { body: { flows: { name: { any_: ["late"] } } } })
        expect(all.status).toBe(200)
        expect(all.body).toBeCloseTo(3, 1)
        const two = yield* request("POST", "/flow_runs/lateness", { body: { flow_runs: { id: { any_: ids.slice(0, 2) } } } })
        expect(two.body).toBeCloseTo(4.5, 1)
        const none = yield* request("POST", "/flow_runs/lateness", { body: { flow_runs: { id: { any_: [MISSING] } } } })
        expect(none.body).toBeNull()
      })
    )

    it.effect("counts runs per interval of expected start and per state", () =>
      Effect.gen(function* () {
        const flowId = (yield* request("POST", "/flows/", { body: { name: "history" } })).body.id
        const at = (hours: number) => new Date(Date.UTC(2030, 0, 1, hours)).toISOString()
        for (const [hours, type] of [[1, "SCHEDULED"], [2, "SCHEDULED"], [2, "SCHEDULED"], [30, "SCHEDULED"]] as const) {
          yield* request("POST", "/flow_runs/", {
            body: { flow_id: flowId, state: { type, state_details: { scheduled_time: at(hours) } } }
          })
        }
        const res = yield* request("POST", "/flow_runs/history", {
          body: {
            history_start: at(0),
            history_end: at(48),
            history_interval_seconds: 86400,
            flows: { name: { any_: ["history"] } }
          }
        })
        expect(res.status).toBe(200)
        expect(res.body).toHaveLength(2)
        expect(res.body[0]).toMatchObject({ interval_start: at(0), interval_end: at(24) })
        expect(res.body[0].states).toEqual([
          { state_type: "SCHEDULED", state_name: "Scheduled", count_runs: 3, sum_estimated_run_time: 0, sum_estimated_lateness: 0 }
        ])
        expect(res.body[1].states[0].count_runs).toBe(1)
        const minutes = yield* request("POST", "/flow_runs/history", {
          body: { history_start: at(0), history_end: at(240), history_interval_seconds: 60 }
        })
        expect(minutes.body).toHaveLength(500)
        const bad = yield* request("POST", "/flow_runs/history", {
          body: { history_start: at(0), history_end: at(1), history_interval_seconds: 0.5 }
        })
        expect(bad.status).toBe(422)
        expect(bad.body).toEqual({ detail: "History interval must not be less than 1 second." })
        // An interval whose first bucket would end past the year 9999 has no date to answer with.
        for (const path of ["/flow_runs/history", "/task_runs/history"]) {
          const huge = yield* request("POST", path, {
            body: { history_start: at(0), history_end: at(1), history_interval_seconds: 3.4e38 }
          })
          expect(huge.status).toBe(422)
          expect(huge.body).toEqual({ detail: "History interval is too large." })
          // A last bucket that would end past it ends at the last instant there is.
          const untilTheEnd = yield* request("POST", path, {
            body: { history_start: at(0), history_end: "9999-12-31T23:59:59.999Z", history_interval_seconds: 2 ** 31 }
          })
          expect(untilTheEnd.status).toBe(200)
          expect(untilTheEnd.body.at(-1).interval_end).toBe("9999-12-31T23:59:59.999Z")
          expect(untilTheEnd.body.at(-2).interval_end).toBe(new Date(Date.parse(at(0)) + (untilTheEnd.body.length - 1) * 2 ** 31 * 1000).toISOString())
        }
      })
    )

    it.effect("sets the state of every matching run, each through the policy", () =>
      Effect.gen(function* () {
        const flowId = (yield* request("POST", "/flows/", { body: { name: "bulk" } })).body.id
        const scheduled = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "SCHEDULED" }, tags: ["bulk"] } })).body
        const running = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "RUNNING" }, tags: ["bulk"] } })).body
        const res = yield* request("POST", "/flow_runs/bulk_set_state", {
          body: { flow_runs: { tags: { all_: ["bulk"] } }, state: { type: "CANCELLING" } }
        })
        expect(res.status).toBe(200)
        const byRun = Object.fromEntries(res.body.results.map((r: any) => [r.flow_run_id, r]))
        expect(byRun[scheduled.id]).toMatchObject({ status: "REJECT", state: { type: "CANCELLED" } })
        expect(byRun[running.id]).toMatchObject({ status: "ACCEPT", state: { type: "CANCELLING" } })
        const none = yield* request("POST", "/flow_runs/bulk_set_state", {
          body: { flow_runs: { id: { any_: [MISSING] } }, state: { type: "CANCELLED" } }
        })
        expect(none.body).toEqual({ results: [] })
      })
    )
  })
})
