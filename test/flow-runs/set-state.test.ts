import { describe, expect, it } from "@effect/vitest"
import { Effect, Queue, TestClock } from "effect"
import { Transitions } from "../../src/orchestration/transitions.ts"
import { request, testServer } from "../support/server.ts"

const setState = (id: string, state: Record<string, unknown>, force?: boolean) =>
  request("POST", `/flow_runs/${id}/set_state`, { body: force === undefined ? { state } : { state, force } })

describe("POST /flow_runs/{id}/set_state", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("walks Scheduled → Pending → Running → Failed → AwaitingRetry → Running → Completed", () =>
      Effect.gen(function* () {
        const flowId = (yield* request("POST", "/flows/", { body: { name: "lifecycle" } })).body.id
        const created = yield* request("POST", "/flow_runs/", {
          body: {
            flow_id: flowId,
            state: { type: "SCHEDULED" },
            empirical_policy: { retries: 1, retry_delay: 5 }
          }
        })
        const run = created.body
        expect(run.state).toMatchObject({ type: "SCHEDULED", name: "Scheduled" })

        yield* TestClock.adjust("1 second")
        const pending = yield* setState(run.id, { type: "PENDING" })
        expect(pending.status).toBe(201)
        expect(pending.body).toMatchObject({ status: "ACCEPT", details: { type: "accept_details" }, state: { type: "PENDING" } })
        expect(pending.body.state.state_details.scheduled_time).toBe(run.state.state_details.scheduled_time)

        yield* TestClock.adjust("1 second")
        const running = yield* setState(run.id, { type: "RUNNING" })
        expect(running.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING" } })

        yield* TestClock.adjust("10 seconds")
        const failed = yield* setState(run.id, { type: "FAILED", message: "boom" })
        expect(failed.status).toBe(201)
        expect(failed.body).toMatchObject({
          status: "REJECT",
          details: { type: "reject_details", reason: "Retrying" },
          state: { type: "SCHEDULED", name: "AwaitingRetry", message: "boom" }
        })
        const retryAt = new Date(failed.body.state.state_details.scheduled_time).getTime()
        expect(retryAt - new Date(failed.body.state.timestamp).getTime()).toBe(5000)

        const tooEarly = yield* setState(run.id, { type: "RUNNING" })
        expect(tooEarly.status).toBe(200)
        expect(tooEarly.body).toMatchObject({
          status: "WAIT",
          details: { type: "wait_details", delay_seconds: 5, reason: "Scheduled time is in the future" },
          state: { type: "SCHEDULED", name: "AwaitingRetry" }
        })

        yield* TestClock.adjust("5 seconds")
        const rerun = yield* setState(run.id, { type: "RUNNING", name: "Retrying" })
        expect(rerun.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING", name: "Retrying" } })

        yield* TestClock.adjust("3 seconds")
        const completed = yield* setState(run.id, { type: "COMPLETED" })
        expect(completed.body).toMatchObject({ status: "ACCEPT", state: { type: "COMPLETED" } })

        const final = (yield* request("GET", `/flow_runs/${run.id}`)).body
        expect(final).toMatchObject({
          state_type: "COMPLETED",
          state_name: "Completed",
          run_count: 2,
          total_run_time: 13,
          expected_start_time: run.expected_start_time
        })
        expect(new Date(final.end_time).getTime() - new Date(final.start_time).getTime()).toBe(18_000)

        const history = (yield* request("GET", `/flow_run_states/?flow_run_id=${run.id}`)).body
        expect(history.map((s: any) => s.name)).toEqual([
          "Scheduled",
          "Pending",
          "Running",
          "AwaitingRetry",
          "Retrying",
          "Completed"
        ])
        const one = yield* request("GET", `/flow_run_states/${history[2].id}`)
        expect(one.body).toEqual(history[2])
        expect((yield* request("GET", "/flow_run_states/00000000-0000-4000-8000-000000000000")).status).toBe(404)
      })
    )

    it.scoped("publishes each committed transition, and nothing for one that was not", () =>
      Effect.gen(function* () {
        const transitions = yield* Transitions
        const seen = yield* transitions.subscribe
        const flowId = (yield* request("POST", "/flows/", { body: { name: "published" } })).body.id
        const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })).body
        const first = yield* Queue.take(seen)
        expect(first).toMatchObject({ kind: "flow_run", run_id: run.id, initial_state: null, validated_state: { type: "PENDING" } })
        yield* setState(run.id, { type: "PENDING" })
        const running = yield* setState(run.id, { type: "RUNNING" })
        const second = yield* Queue.take(seen)
        expect(second).toMatchObject({ run_id: run.id, initial_state: { type: "PENDING" }, validated_state: { type: "RUNNING" } })
        expect(second.validated_state.id).toBe(running.body.state.id)
        expect(yield* Queue.size(seen)).toBe(0)
      })
    )

    it.effect("aborts a second Pending, and force applies any state", () =>
      Effect.gen(function* () {
        const flowId = (yield* request("POST", "/flows/", { body: { name: "forced" } })).body.id
        const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })).body
        const again = yield* setState(run.id, { type: "PENDING" })
        expect(again.status).toBe(200)
        expect(again.body).toEqual({
          status: "ABORT",
          details: { type: "abort_details", reason: "This run is in a PENDING state and cannot transition to a PENDING state." },
          state: run.state
        })
        const forced = yield* setState(run.id, { type: "COMPLETED" }, true)
        expect(forced.body.status).toBe("ACCEPT")
        yield* TestClock.adjust("1 second")
        const reopened = yield* setState(run.id, { type: "RUNNING" }, true)
        expect(reopened.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING" } })
        const after = (yield* request("GET", `/flow_runs/${run.id}`)).body
        expect(after.end_time).toBeNull()
      })
    )

    it.effect("cancels a scheduled run with no infrastructure straight away", () =>
      Effect.gen(function* () {
        const flowId = (yield* request("POST", "/flows/", { body: { name: "cancel-me" } })).body.id
        const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "SCHEDULED" } } })).body
        const res = yield* setState(run.id, { type: "CANCELLING" })
        expect(res.body).toMatchObject({
          status: "REJECT",
          details: { reason: "Scheduled flow run has no infrastructure to terminate." },
          state: { type: "CANCELLED", name: "Cancelled" }
        })
        expect((yield* request("GET", `/flow_runs/${run.id}`)).body.state_type).toBe("CANCELLED")
      })
    )

    it.effect("answers 404 for an unknown run and 422 for a bad state", () =>
      Effect.gen(function* () {
        const missing = yield* setState("00000000-0000-4000-8000-000000000000", { type: "RUNNING" })
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual({ detail: "Flow run not found" })
        const flowId = (yield* request("POST", "/flows/", { body: { name: "bad-state" } })).body.id
        const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })).body
        const bad = yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "DONE" } } })
        expect(bad.status).toBe(422)
        expect(bad.body.detail[0].loc).toEqual(["body", "state", "type"])
      })
    )

    it.effect("of 50 concurrent conflicting transitions exactly one wins and the history stays consistent", () =>
      Effect.gen(function* () {
        const flowId = (yield* request("POST", "/flows/", { body: { name: "race" } })).body.id
        const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "SCHEDULED" } } })).body
        // Every contender proposes Pending, each under its own name: only the first may take the run.
        const answers = yield* Effect.all(
          Array.from({ length: 50 }, () => setState(run.id, { type: "PENDING" })),
          { concurrency: 50 }
        )
        const statuses = answers.map((a) => a.body.status)
        expect(statuses.filter((s) => s === "ACCEPT")).toHaveLength(1)
        expect(statuses.filter((s) => s === "ABORT")).toHaveLength(49)
        const history = (yield* request("GET", `/flow_run_states/?flow_run_id=${run.id}`)).body
        expect(history.map((s: any) => s.type)).toEqual(["SCHEDULED", "PENDING"])
        const after = (yield* request("GET", `/flow_runs/${run.id}`)).body
        expect(after.state_id).toBe(history[1].id)
      })
    )
  })
})
