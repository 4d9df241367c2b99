import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const makeFlow = (name: string) => Effect.map(request("POST", "/flows/", { body: { name } }), (res) => res.body.id as string)

const makeRun = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/flow_runs/", { body }), (res) => {
    expect([200, 201], JSON.stringify(res.body)).toContain(res.status)
    return res.body
  })

describe("flow runs", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("creates a run (201) in Pending with a generated name, and repeats by idempotency key (200)", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-create")
        const created = yield* request("POST", "/flow_runs/", {
          body: { flow_id: flowId, idempotency_key: "once", parameters: { x: 1 }, tags: ["t"] }
        })
        expect(created.status).toBe(201)
        const run = created.body
        expect(run).toMatchObject({
          flow_id: flowId,
          parameters: { x: 1 },
          tags: ["t"],
          state_type: "PENDING",
          state_name: "Pending",
          run_count: 0,
          total_run_time: 0,
          idempotency_key: "once",
          labels: { "prefect.flow.id": flowId },
          empirical_policy: { max_retries: 0, retry_delay_seconds: 0, retries: null, retry_delay: null, pause_keys: [], resuming: false }
        })
        expect(run.name).toMatch(/^[a-z]+-[a-z]+$/)
        expect(run.state).toMatchObject({ type: "PENDING", name: "Pending", state_details: { flow_run_id: run.id } })
        expect(run.state_id).toBe(run.state.id)
        expect(run.expected_start_time).toBe(run.state.timestamp)

        const again = yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, idempotency_key: "once", name: "other" } })
        expect(again.status).toBe(200)
        expect(again.body.id).toBe(run.id)
        expect(again.body.name).toBe(run.name)

        const otherFlow = yield* makeFlow("runs-create-2")
        const sameKeyOtherFlow = yield* request("POST", "/flow_runs/", { body: { flow_id: otherFlow, idempotency_key: "once" } })
        expect(sameKeyOtherFlow.status).toBe(201)
        expect(sameKeyOtherFlow.body.id).not.toBe(run.id)
      })
    )

    it.effect("creates a Scheduled run with its scheduled time as expected and next scheduled start", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-scheduled")
        const run = yield* makeRun({
          flow_id: flowId,
          name: "later",
          state: { type: "SCHEDULED", state_details: { scheduled_time: "2030-01-01T00:00:00Z" } }
        })
        expect(run).toMatchObject({
          name: "later",
          state_type: "SCHEDULED",
          state_name: "Scheduled",
          expected_start_time: "2030-01-01T00:00:00.000Z",
          next_scheduled_start_time: "2030-01-01T00:00:00.000Z",
          start_time: null
        })
        expect(run.state.state_details.scheduled_time).toBe("2030-01-01T00:00:00.000Z")
      })
    )

    it.effect("rejects bad bodies with 422 and a missing flow with 409", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-bad")
        const unknownField = yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, priority: 1 } })
        expect(unknownField.status).toBe(422)
        expect(unknownField.body.detail[0]).toMatchObject({ loc: ["body", "priority"], type: "extra_forbidden" })
        const badState = yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "SLEEPING" } } })
        expect(badState.status).toBe(422)
        expect(badState.body.detail[0]).toMatchObject({ loc: ["body", "state", "type"], type: "enum" })
        const noFlow = yield* request("POST", "/flow_runs/", { body: {} })
        expect(noFlow.body.detail[0]).toMatchObject({ loc: ["body", "flow_id"], type: "missing" })
        const missingFlow = yield* request("POST", "/flow_runs/", { body: { flow_id: MISSING } })
        expect(missingFlow.status).toBe(409)
        const noPool = yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, work_pool_name: "nowhere" } })
        expect(noPool.status).toBe(404)
      })
    )

    it.effect("reads a run by id; 404 for unknown ids and non-UUIDs", () =>
      Effect.gen(function* () {
        const run = yield* makeRun({ flow_id: yield* makeFlow("runs-read") })
        const read = yield* request("GET", `/flow_runs/${run.id}`)
        expect(read.status).toBe(200)
        expect(read.body.id).toBe(run.id)
        expect(read.body.state).toEqual(run.state)
        const missing = yield* request("GET", `/flow_runs/${MISSING}`)
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual({ detail: "Flow run not found" })
        expect((yield* request("GET", "/flow_runs/nope")).status).toBe(404)
      })
    )

    it.effect("PATCH updates every field of the spec's table and nothing else", () =>
      Effect.gen(function* () {
        const run = yield* makeRun({ flow_id: yield* makeFlow("runs-patch"), parameters: { a: 1 }, tags: ["x"] })
        const policy = {
          max_retries: 2,
          retry_delay_seconds: 1.5,
          retries: 3,
          retry_delay: 10,
          pause_keys: ["k1"],
          resuming: true,
          retry_type: "in_process"
        }
        const res = yield* request("PATCH", `/flow_runs/${run.id}`, {
          body: {
            name: "renamed",
            flow_version: "v2",
            parameters: { b: 2 },
            empirical_policy: policy,
            tags: ["y", "z"],
            infrastructure_pid: "pid-42"
          }
        })
        expect(res.status).toBe(204)
        const after = (yield* request("GET", `/flow_runs/${run.id}`)).body
        expect(after).toMatchObject({
          name: "renamed",
          flow_version: "v2",
          parameters: { b: 2 },
          empirical_policy: policy,
          tags: ["y", "z"],
          infrastructure_pid: "pid-42",
          state_type: "PENDING",
          flow_id: run.flow_id
        })

        const partial = yield* request("PATCH", `/flow_runs/${run.id}`, { body: { tags: [] } })
        expect(partial.status).toBe(204)
        const kept = (yield* request("GET", `/flow_runs/${run.id}`)).body
        expect(kept).toMatchObject({ name: "renamed", tags: [], parameters: { b: 2 } })

        const jobVariables = yield* request("PATCH", `/flow_runs/${run.id}`, { body: { job_variables: { cpu: 2 } } })
        expect(jobVariables.status).toBe(400)
        expect(jobVariables.body).toEqual({ detail: "Job variables for a flow run in state PENDING cannot be updated" })

        const badPolicy = yield* request("PATCH", `/flow_runs/${run.id}`, { body: { empirical_policy: { retries: "many" } } })
        expect(badPolicy.status).toBe(422)
        expect(badPolicy.body.detail[0]).toMatchObject({ loc: ["body", "empirical_policy", "retries"], type: "int_parsing", input: "many" })
        const badField = yield* request("PATCH", `/flow_runs/${run.id}`, { body: { state_type: "RUNNING" } })
        expect(badField.status).toBe(422)
        expect((yield* request("PATCH", `/flow_runs/${MISSING}`, { body: { name: "x" } })).status).toBe(404)
      })
    )

    it.effect("PATCH job_variables of a Scheduled run of a deployment: checked against its pool's template, 204", () =>
      Effect.gen(function* () {
        const pool = yield* request("POST", "/work_pools/", {
          body: {
            name: "patch-job-vars",
            type: "docker",
            base_job_template: {
              job_configuration: { thing_one: "{{ expected_variable_1 }}", image: "{{ image }}" },
              variables: {
                properties: {
                  expected_variable_1: { title: "expected_variable_1", default: 0, type: "integer" },
                  image: { type: "string" }
                },
                required: ["expected_variable_1", "image"]
              }
            }
          }
        })
        expect(pool.status).toBe(201)
        const flowId = yield* makeFlow("runs-patch-job-vars")
        const deployment = (yield* request("POST", "/deployments/", {
          body: { name: "pooled", flow_id: flowId, work_pool_name: "patch-job-vars", job_variables: { image: "base" } }
        })).body
        const createRun = (deploymentId: string) =>
          Effect.map(request("POST", `/deployments/${deploymentId}/create_flow_run`, { body: {} }), (res) => {
            expect(res.status, JSON.stringify(res.body)).toBe(201)
            return res.body
          })
        const run = yield* createRun(deployment.id)
        expect(run.state_type).toBe("SCHEDULED")
        const patch = (id: string, job_variables: unknown) => request("PATCH", `/flow_runs/${id}`, { body: { job_variables } })

        const valid = yield* patch(run.id, { expected_variable_1: 100 })
        expect(valid.status).toBe(204)
        expect((yield* request("GET", `/flow_runs/${run.id}`)).body.job_variables).toEqual({ expected_variable_1: 100 })

        const wrongType = yield* patch(run.id, { expected_variable_1: "this_should_be_an_int" })
        expect(wrongType.status).toBe(422)
        expect(wrongType.body).toEqual({
          detail:
            "Error updating flow run: Validation failed for field 'expected_variable_1'. Failure reason: 'this_should_be_an_int' is not of type 'integer'"
        })
        // Refused: the run keeps what it had.
        expect((yield* request("GET", `/flow_runs/${run.id}`)).body.job_variables).toEqual({ expected_variable_1: 100 })

        // Required variables count here, the run being where they end up: the deployment's image filled one above.
        const imageless = (yield* request("POST", "/deployments/", { body: { name: "no-image", flow_id: flowId, work_pool_name: "patch-job-vars" } })).body
        const bare = yield* makeRun({ flow_id: flowId, deployment_id: imageless.id, state: { type: "SCHEDULED" } })
        const missing = yield* patch(bare.id, {})
        expect(missing.status).toBe(422)
        expect(missing.body).toEqual({ detail: "Error updating flow run: Validation failed. Failure reason: 'image' is a required property" })
        expect((yield* patch(bare.id, { image: "mine" })).status).toBe(204)

        // A deployment without a pool has no template to check against.
        const poolless = (yield* request("POST", "/deployments/", { body: { name: "poolless", flow_id: flowId } })).body
        const free = yield* createRun(poolless.id)
        expect((yield* patch(free.id, { anything: ["goes"] })).status).toBe(204)
        expect((yield* request("GET", `/flow_runs/${free.id}`)).body.job_variables).toEqual({ anything: ["goes"] })

        // A run of no deployment cannot take job variables.
        const loose = yield* makeRun({ flow_id: flowId, state: { type: "SCHEDULED" } })
        const noDeployment = yield* patch(loose.id, { cpu: 1 })
        expect(noDeployment.status).toBe(400)
        expect(noDeployment.body).toEqual({ detail: "A deployment for the flow run could not be found" })
        // Nor does a run that is no longer Scheduled.
        expect((yield* request("POST", `/flow_runs/${free.id}/set_state`, { body: { state: { type: "PENDING" } } })).status).toBe(201)
        const pending = yield* patch(free.id, { cpu: 1 })
        expect(pending.status).toBe(400)
        expect(pending.body).toEqual({ detail: "Job variables for a flow run in state PENDING cannot be updated" })
        expect((yield* patch(MISSING, { cpu: 1 })).body).toEqual({ detail: "Flow run not found" })
      })
    )

    it.effect("deletes a run with 204, then it is gone", () =>
      Effect.gen(function* () {
        const run = yield* makeRun({ flow_id: yield* makeFlow("runs-delete") })
        expect((yield* request("DELETE", `/flow_runs/${run.id}`)).status).toBe(204)
        expect((yield* request("GET", `/flow_runs/${run.id}`)).status).toBe(404)
        expect((yield* request("DELETE", `/flow_runs/${run.id}`)).status).toBe(404)
      })
    )

    it.effect("filters by the FlowRunFilter criteria and by flow, sorts, counts, pages and bulk-deletes", () =>
      Effect.gen(function* () {
        const alpha = yield* makeFlow("filter-alpha")
        const beta = yield* makeFlow("filter-beta")
        const made: Array<any> = []
        const specs = [
          { flow_id: alpha, name: "r1", tags: ["red", "big"], state: { type: "SCHEDULED", state_details: { scheduled_time: "2031-01-03T00:00:00Z" } } },
          { flow_id: alpha, name: "r2", tags: ["red"], state: { type: "SCHEDULED", state_details: { scheduled_time: "2031-01-01T00:00:00Z" } } },
          { flow_id: beta, name: "r3", tags: [], idempotency_key: "k3" },
          { flow_id: beta, name: "r4", tags: ["blue"], state: { type: "RUNNING" } },
          { flow_id: beta, name: "x5", tags: ["blue", "big"], state: { type: "COMPLETED", name: "Cached" } }
        ]
        for (const spec of specs) {
          made.push(yield* makeRun(spec))
          yield* TestClock.adjust("1 second")
        }
        const mine = { flows: { name: { any_: ["filter-alpha", "filter-beta"] } } }
        const names = (body: Record<string, unknown>) =>
          Effect.map(request("POST", "/flow_runs/filter", { body: { ...mine, sort: "NAME_ASC", ...body } }), (res) => {
            expect(res.status, JSON.stringify(res.body)).toBe(200)
            return res.body.map((r: any) => r.name)
          })

        expect(yield* names({})).toEqual(["r1", "r2", "r3", "r4", "x5"])
        expect(yield* names({ sort: "ID_DESC" })).toEqual(["x5", "r4", "r3", "r2", "r1"])
        expect(yield* names({ flows: { name: { any_: ["filter-alpha"] } } })).toEqual(["r1", "r2"])
        expect(yield* names({ flow_runs: { id: { any_: [made[0].id, made[3].id] } } })).toEqual(["r1", "r4"])
        expect(yield* names({ flow_runs: { id: { not_any_: [made[0].id] } } })).toEqual(["r2", "r3", "r4", "x5"])
        expect(yield* names({ flow_runs: { name: { like_: "r" } } })).toEqual(["r1", "r2", "r3", "r4"])
        expect(yield* names({ flow_runs: { tags: { all_: ["red", "big"] } } })).toEqual(["r1"])
        expect(yield* names({ flow_runs: { tags: { any_: ["big", "blue"] } } })).toEqual(["r1", "r4", "x5"])
        expect(yield* names({ flow_runs: { tags: { is_null_: true } } })).toEqual(["r3"])
        expect(yield* names({ flow_runs: { state: { type: { any_: ["SCHEDULED"] } } } })).toEqual(["r1", "r2"])
        expect(yield* names({ flow_runs: { state: { type: { not_any_: ["SCHEDULED", "PENDING"] } } } })).toEqual(["r4", "x5"])
        expect(yield* names({ flow_runs: { state: { name: { any_: ["Cached"] } } } })).toEqual(["x5"])
        expect(
          yield* names({ flow_runs: { state: { operator: "or_", type: { any_: ["RUNNING"] }, name: { any_: ["Cached"] } } } })
        ).toEqual(["r4", "x5"])
        expect(yield* names({ flow_runs: { start_time: { is_null_: false } } })).toEqual(["r4", "x5"])
        expect(yield* names({ flow_runs: { end_time: { is_null_: false } } })).toEqual(["x5"])
        expect(yield* names({ flow_runs: { next_scheduled_start_time: { before_: "2031-01-02T00:00:00Z" } } })).toEqual(["r2"])
        expect(yield* names({ flow_runs: { expected_start_time: { after_: "2031-01-02T00:00:00Z" } } })).toEqual(["r1"])
        expect(yield* names({ flow_runs: { idempotency_key: { any_: ["k3"] } } })).toEqual(["r3"])
        expect(yield* names({ flow_runs: { deployment_id: { is_null_: true }, parent_task_run_id: { is_null_: true } } }))
          .toEqual(["r1", "r2", "r3", "r4", "x5"])
        expect(yield* names({ flow_runs: { operator: "or_", name: { any_: ["r1"] }, tags: { all_: ["blue"] } } }))
          .toEqual(["r1", "r4", "x5"])
        expect(yield* names({ sort: "EXPECTED_START_TIME_DESC", limit: 2 })).toEqual(["r1", "r2"])
        expect(yield* names({ sort: "NEXT_SCHEDULED_START_TIME_ASC", limit: 2 })).toEqual(["r2", "r1"])
        expect(yield* names({ offset: 3 })).toEqual(["r4", "x5"])

        const unknown = yield* request("POST", "/flow_runs/filter", { body: { flow_runs: { colour: {} } } })
        expect(unknown.status).toBe(422)
        expect(unknown.body.detail[0]).toMatchObject({ loc: ["body", "flow_runs", "colour"], type: "extra_forbidden" })
        const tooMany = yield* request("POST", "/flow_runs/filter", { body: { limit: 201 } })
        expect(tooMany.status).toBe(422)
        expect(tooMany.body).toEqual({ detail: "Invalid limit: must be less than or equal to 200." })

        const count = yield* request("POST", "/flow_runs/count", { body: { ...mine, flow_runs: { tags: { any_: ["big"] } } } })
        expect(count.body).toBe(2)
        const page = yield* request("POST", "/flow_runs/paginate", { body: { ...mine, sort: "NAME_ASC", page: 2, limit: 2 } })
        expect(page.body).toMatchObject({ count: 5, limit: 2, pages: 3, page: 2 })
        expect(page.body.results.map((r: any) => r.name)).toEqual(["r3", "r4"])

        const deleted = yield* request("POST", "/flow_runs/bulk_delete", { body: { flow_runs: { tags: { any_: ["red"] } } } })
        expect(deleted.body.deleted.sort()).toEqual([made[0].id, made[1].id].sort())
        expect((yield* request("POST", "/flow_runs/count", { body: mine })).body).toBe(3)
      })
    )
  })
})
