import { describe, expect, it } from "@effect/vitest"
import { Effect, Queue, TestClock } from "effect"
import { Transitions } from "../../src/orchestration/transitions.ts"
import { idOf, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const setState = (id: string, state: Record<string, unknown>, force?: boolean) =>
  request("POST", `/flow_runs/${id}/set_state`, { body: force === undefined ? { state } : { state, force } })

/** A new run of a new flow, Pending: its body. */
const pendingRun = (flowName: string) =>
  Effect.gen(function* () {
    const flowId = yield* makeFlow(flowName)
    return ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } }), 201)
  })

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
        const pending = yield* setState(idOf(run), { type: "PENDING" })
        expect(pending.status).toBe(201)
        expect(pending.body).toMatchObject({ status: "ACCEPT", details: { type: "accept_details" }, state: { type: "PENDING" } })
        expect(pending.body.state.state_details.scheduled_time).toBe(run.state.state_details.scheduled_time)

        yield* TestClock.adjust("1 second")
        const running = yield* setState(idOf(run), { type: "RUNNING" })
        expect(running.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING" } })

        yield* TestClock.adjust("10 seconds")
        const failed = yield* setState(idOf(run), { type: "FAILED", message: "boom" })
        expect(failed.status).toBe(201)
        expect(failed.body).toMatchObject({
          status: "REJECT",
          details: { type: "reject_details", reason: "Retrying" },
          state: { type: "SCHEDULED", name: "AwaitingRetry", message: "boom" }
        })
        const retryAt = Date.parse(failed.body.state.state_details.scheduled_time as string)
        expect(retryAt - Date.parse(failed.body.state.timestamp as string)).toBe(5000)

        const tooEarly = yield* setState(idOf(run), { type: "RUNNING" })
        expect(tooEarly.status).toBe(200)
        expect(tooEarly.body).toMatchObject({
          status: "WAIT",
          details: { type: "wait_details", delay_seconds: 5, reason: "Scheduled time is in the future" },
          state: { type: "SCHEDULED", name: "AwaitingRetry" }
        })

        yield* TestClock.adjust("5 seconds")
        const rerun = yield* setState(idOf(run), { type: "RUNNING", name: "Retrying" })
        expect(rerun.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING", name: "Retrying" } })

        yield* TestClock.adjust("3 seconds")
        const completed = yield* setState(idOf(run), { type: "COMPLETED" })
        expect(completed.body).toMatchObject({ status: "ACCEPT", state: { type: "COMPLETED" } })

        const final = (yield* request("GET", `/flow_runs/${run.id}`)).body
        expect(final).toMatchObject({
          state_type: "COMPLETED",
          state_name: "Completed",
          run_count: 2,
          total_run_time: 13,
          expected_start_time: run.expected_start_time
        })
        expect(Date.parse(final.end_time as string) - Date.parse(final.start_time as string)).toBe(18_000)

        const history = (yield* request("GET", `/flow_run_states/?flow_run_id=${run.id}`)).body
        expect(history.map((s) => s.name)).toEqual([
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
        yield* setState(idOf(run), { type: "PENDING" })
        const running = yield* setState(idOf(run), { type: "RUNNING" })
        const second = yield* Queue.take(seen)
        expect(second).toMatchObject({ run_id: run.id, initial_state: { type: "PENDING" }, validated_state: { type: "RUNNING" } })
        expect(second.validated_state.id).toBe(running.body.state.id)
        expect(yield* Queue.size(seen)).toBe(0)
      })
    )

    it.effect("aborts a second Pending, answering the run's state", () =>
      Effect.gen(function* () {
        const run = yield* pendingRun("aborted")
        const again = yield* setState(idOf(run), { type: "PENDING" })
        expect(again.status).toBe(200)
        expect(again.body).toEqual({
          status: "ABORT",
          details: { type: "abort_details", reason: "This run is in a PENDING state and cannot transition to a PENDING state." },
          state: run.state
        })
      })
    )

    it.effect("force applies any state: a completed run reopened is running again, without an end time", () =>
      Effect.gen(function* () {
        const run = yield* pendingRun("forced")
        const forced = yield* setState(idOf(run), { type: "COMPLETED" }, true)
        expect(forced.body.status).toBe("ACCEPT")
        yield* TestClock.adjust("1 second")
        const reopened = yield* setState(idOf(run), { type: "RUNNING" }, true)
        expect(reopened.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING" } })
        const after = (yield* request("GET", `/flow_runs/${run.id}`)).body
        expect(after.end_time).toBeNull()
      })
    )

    it.effect("cancels a scheduled run with no infrastructure straight away", () =>
      Effect.gen(function* () {
        const flowId = (yield* request("POST", "/flows/", { body: { name: "cancel-me" } })).body.id
        const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "SCHEDULED" } } })).body
        const res = yield* setState(idOf(run), { type: "CANCELLING" })
        expect(res.body).toMatchObject({
          status: "REJECT",
          details: { reason: "Scheduled flow run has no infrastructure to terminate." },
          state: { type: "CANCELLED", name: "Cancelled" }
        })
        expect((yield* request("GET", `/flow_runs/${run.id}`)).body.state_type).toBe("CANCELLED")
      })
    )

    it.effect("answers 404 for an unknown run", () =>
      Effect.gen(function* () {
        const missing = yield* setState("00000000-0000-4000-8000-000000000000", { type: "RUNNING" })
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual({ detail: "Flow run not found" })
      })
    )

    it.effect("answers 422 for a state type there is not", () =>
      Effect.gen(function* () {
        const run = yield* pendingRun("bad-state")
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
          Array.from({ length: 50 }, () => setState(idOf(run), { type: "PENDING" })),
          { concurrency: 50 }
        )
        const statuses = answers.map((a) => a.body.status)
        expect(statuses.filter((s) => s === "ACCEPT")).toHaveLength(1)
        expect(statuses.filter((s) => s === "ABORT")).toHaveLength(49)
        const history = (yield* request("GET", `/flow_run_states/?flow_run_id=${run.id}`)).body
        expect(history.map((s) => s.type)).toEqual(["SCHEDULED", "PENDING"])
        const after = (yield* request("GET", `/flow_runs/${run.id}`)).body
        expect(after.state_id).toBe(history[1].id)
      })
    )
  })
})
