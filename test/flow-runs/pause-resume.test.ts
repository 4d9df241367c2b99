import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { idOf } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const runningRun = (flowName: string) =>
  Effect.gen(function* () {
    const flowId = (yield* request("POST", "/flows/", { body: { name: flowName } })).body.id
    const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })).body
    yield* TestClock.adjust("1 second")
    yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "RUNNING" } } })
    yield* TestClock.adjust("1 second")
    return idOf(run)
  })

const setState = (id: string, state: Record<string, unknown>) =>
  request("POST", `/flow_runs/${id}/set_state`, { body: { state } })

describe("pausing and resuming flow runs", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("pauses a running run once per pause key, and resumes it to Running", () =>
      Effect.gen(function* () {
        const id = yield* runningRun("pause")
        const paused = yield* setState(id, { type: "PAUSED", state_details: { pause_key: "approve" } })
        expect(paused.body).toMatchObject({ status: "ACCEPT", state: { type: "PAUSED" } })
        expect((yield* request("GET", `/flow_runs/${id}`)).body.empirical_policy.pause_keys).toEqual(["approve"])

        const toPending = yield* setState(id, { type: "PENDING" })
        expect(toPending.body.details.reason).toBe(
          "This run cannot transition to the StateType.PENDING state from the StateType.PAUSED state."
        )

        yield* TestClock.adjust("1 second")
        const resumed = yield* request("POST", `/flow_runs/${id}/resume`, { body: {} })
        expect(resumed.status).toBe(201)
        expect(resumed.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING" } })
        const after = (yield* request("GET", `/flow_runs/${id}`)).body
        expect(after.run_count).toBe(2)
        expect(after.empirical_policy.resuming).toBe(true)

        yield* TestClock.adjust("1 second")
        const again = yield* setState(id, { type: "PAUSED", state_details: { pause_key: "approve" } })
        expect(again.body).toMatchObject({ status: "REJECT", details: { reason: "This pause has already fired." } })
      })
    )

    it.effect("refuses to pause a run that is not running", () =>
      Effect.gen(function* () {
        const flowId = (yield* request("POST", "/flows/", { body: { name: "not-running" } })).body.id
        const pending = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })).body
        const res = yield* setState(idOf(pending), { type: "PAUSED" })
        expect(res.body.details.reason).toBe("Cannot pause flows that are not currently running.")
      })
    )

    it.effect("aborts a suspension of a run without a deployment", () =>
      Effect.gen(function* () {
        const id = yield* runningRun("suspend")
        const suspend = yield* setState(id, { type: "PAUSED", name: "Suspended", state_details: { pause_reschedule: true } })
        expect(suspend.body).toMatchObject({ status: "ABORT", details: { reason: "Cannot suspend flows without a deployment." } })
      })
    )

    it.effect("aborts resuming a run that is not paused (200); an unknown run is 404", () =>
      Effect.gen(function* () {
        const id = yield* runningRun("not-paused")
        const notPaused = yield* request("POST", `/flow_runs/${id}/resume`, { body: {} })
        expect(notPaused.status).toBe(200)
        expect(notPaused.body).toEqual({
          status: "ABORT",
          state: null,
          details: { type: "abort_details", reason: "Cannot resume a flow run that is not paused." }
        })
        expect((yield* request("POST", "/flow_runs/00000000-0000-4000-8000-000000000000/resume", { body: {} })).status).toBe(404)
      })
    )

    it.effect("fails a run whose pause timed out instead of resuming it", () =>
      Effect.gen(function* () {
        const id = yield* runningRun("timeout")
        const timeout = new Date(0 + 1000).toISOString()
        yield* setState(id, { type: "PAUSED", state_details: { pause_timeout: timeout } })
        const res = yield* request("POST", `/flow_runs/${id}/resume`, { body: {} })
        expect(res.body).toMatchObject({
          status: "REJECT",
          details: { reason: "The flow run pause has timed out and can no longer resume." },
          state: { type: "FAILED", message: "The flow was running and never resumed." }
        })
      })
    )

    it.effect("validates run input against the schema the pause stored, and keeps it", () =>
      Effect.gen(function* () {
        const id = yield* runningRun("input")
        const schema = { type: "object", properties: { approved: { type: "boolean" } }, required: ["approved"] }
        yield* request("POST", `/flow_runs/${id}/input`, { body: { key: "paused-schema", value: JSON.stringify(schema) } })
        yield* setState(id, {
          type: "PAUSED",
          state_details: { run_input_keyset: { schema: "paused-schema", response: "paused-response", description: "d" } }
        })
        const missing = yield* request("POST", `/flow_runs/${id}/resume`, { body: { run_input: {} } })
        expect(missing.status).toBe(200)
        expect(missing.body).toMatchObject({
          status: "REJECT",
          state: { type: "PAUSED" },
          details: { type: "abort_details", reason: "Reason: Validation failed. Failure reason: 'approved' is a required property" }
        })
        const wrongType = yield* request("POST", `/flow_runs/${id}/resume`, { body: { run_input: { approved: "yes" } } })
        expect(wrongType.body.details.reason).toMatch(/^Reason: Validation failed for field 'approved'\. Failure reason: /)
        const badJson = yield* request("POST", `/flow_runs/${id}/resume`, {
          body: { run_input: { approved: { __prefect_kind: "json", value: "{" } } }
        })
        expect(badJson.body.details.reason).toMatch(/^Error hydrating run input: Invalid JSON: /)
        // Run input is hydrated before it is checked and kept.
        const ok = yield* request("POST", `/flow_runs/${id}/resume`, {
          body: { run_input: { approved: { __prefect_kind: "json", value: "true" } } }
        })
        expect(ok.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING" } })
        const stored = yield* request("GET", `/flow_runs/${id}/input/paused-response`)
        expect(JSON.parse(stored.text)).toEqual({ approved: true })
      })
    )
  })
})
