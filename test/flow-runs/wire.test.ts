/**
 * The answers of the run lifecycle's routes (create, read, a worker's poll, set_state) are written
 * by hand (src/flow-runs/wire.ts): they must be what the declared schemas encode, field for field.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { FlowRunsRepo } from "../../src/flow-runs/repo.ts"
import { FlowRun, OrchestrationResult } from "../../src/flow-runs/schemas.ts"
import { flowRunJson, orchestrationResultJson, workerFlowRunsJson } from "../../src/flow-runs/wire.ts"
import { WorkerFlowRun } from "../../src/work-pools/schemas.ts"
import { stateDetailsWire } from "../../src/domain/state-wire.ts"
import { StateDetails } from "../../src/domain/states.ts"
import { idOf } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const post = (path: string, body: unknown) =>
  Effect.map(request("POST", path, { body }), (res) => {
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
    return res.body
  })

describe("the lifecycle's answers", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("are the schemas' encodings, and what the routes answer", () =>
      Effect.gen(function* () {
        const repo = yield* FlowRunsRepo
        const flow = idOf(yield* post("/flows/", { name: "wire-answers" }))
        yield* post("/work_pools/", { name: "wire-pool", type: "process" })
        const queue = yield* post("/work_pools/wire-pool/queues/", { name: "q" })
        const deployment = idOf(yield* post("/deployments/", { name: "d", flow_id: flow, work_pool_name: "wire-pool", work_queue_name: "q" }))
        const created = yield* request("POST", `/deployments/${deployment}/create_flow_run`, {
          body: { tags: ["t"], parameters: { n: { deep: [1, null, "x"] } }, job_variables: { env: { A: "1" } } }
        })
        expect(created.status).toBe(201)
        const id = idOf(created.body)
        const stored = yield* repo.find(id)
        const run = stored._tag === "Some" ? stored.value : undefined
        expect(run).toBeDefined()
        expect(flowRunJson(run!)).toBe(JSON.stringify(Schema.encodeSync(FlowRun)(run!)))
        expect(created.body).toEqual(JSON.parse(flowRunJson(run!)))
        expect((yield* request("GET", `/flow_runs/${id}`)).body).toEqual(created.body)

        // The poll: the pool's id and name are not part of a listed run.
        const listed = [{ work_pool_id: run!.work_pool_id!, work_queue_id: idOf(queue), flow_run: run! }]
        expect(workerFlowRunsJson(listed)).toBe(JSON.stringify(Schema.encodeSync(Schema.Array(WorkerFlowRun))(listed)))
        const polled = yield* post("/work_pools/wire-pool/get_scheduled_flow_runs", {})
        expect(polled).toHaveLength(1)
        expect(polled[0].flow_run).not.toHaveProperty("work_pool_id")
        expect(polled[0]).toEqual(JSON.parse(workerFlowRunsJson(listed))[0])

        // set_state: accepted (201), then a repeat that stores nothing (200); every kind of details.
        const accepted = yield* request("POST", `/flow_runs/${id}/set_state`, { body: { state: { type: "PENDING" } } })
        expect(accepted.status).toBe(201)
        expect(accepted.body.status).toBe("ACCEPT")
        const state = accepted.body.state
        const decoded = Schema.decodeUnknownSync(OrchestrationResult)(accepted.body)
        expect(JSON.parse(orchestrationResultJson(decoded))).toEqual(accepted.body)
        const repeated = yield* request("POST", `/flow_runs/${id}/set_state`, { body: { state: { type: "PENDING" } } })
        expect(repeated.status).toBe(200)
        expect(repeated.body.status).toBe("ABORT")
        expect(JSON.parse(orchestrationResultJson(Schema.decodeUnknownSync(OrchestrationResult)(repeated.body)))).toEqual(repeated.body)
        for (
          const details of [
            { type: "accept_details" },
            { type: "reject_details", reason: "no" },
            { type: "abort_details", reason: null },
            { type: "wait_details", delay_seconds: 5, reason: "later" }
          ] as const
        ) {
          for (const withState of [null, state]) {
            const result = Schema.decodeUnknownSync(OrchestrationResult)({ state: withState, status: "WAIT", details })
            expect(orchestrationResultJson(result)).toBe(JSON.stringify(Schema.encodeSync(OrchestrationResult)(result)))
          }
        }
      })
    )
  })
})

describe("state details", () => {
  it("are written as their schema encodes them", () => {
    const decode = Schema.decodeUnknownSync(StateDetails)
    for (
      const raw of [
        {},
        { flow_run_id: "00000000-0000-4000-8000-000000000001", scheduled_time: "2031-01-01T00:00:00Z", cache_key: "k" },
        { pause_timeout: "2031-01-01T10:00:00+02:00", pause_reschedule: true, pause_key: "p", run_input_keyset: { a: "b" } },
        { deferred: null, untrackable_result: true, refresh_cache: false, retriable: true, cache_expiration: "2030-05-05T05:05:05.5Z" },
        { transition_id: "00000000-0000-4000-8000-000000000002", traceparent: "00-x", deployment_concurrency_lease_id: "00000000-0000-4000-8000-000000000003" }
      ]
    ) {
      const details = decode(raw)
      expect(JSON.stringify(stateDetailsWire(details))).toBe(JSON.stringify(Schema.encodeSync(StateDetails)(details)))
    }
  })
})
