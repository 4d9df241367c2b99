import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { checkReadiness } from "../../src/services/foreman.ts"
import { ok, makeFlow, makeDeployment } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const createRun = (deploymentId: string, body: Record<string, unknown> = {}) =>
  request("POST", `/deployments/${deploymentId}/create_flow_run`, { body })

describe("runs of deployments", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("create_flow_run merges parameters, tags and labels over the deployment's and starts Scheduled now", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-of-dep")
        const dep = yield* makeDeployment({
          name: "d",
          flow_id: flowId,
          parameters: { a: 1, b: 2 },
          tags: ["dep", "shared"],
          labels: { env: "prod" },
          version: "v7",
          work_queue_name: "runs-q",
          job_variables: { image: "dep" }
        })
        const res = yield* createRun(dep.id, {
          parameters: {
            b: 3,
            c: { __prefect_kind: "json", value: "[1, 2]" },
            d: { __prefect_kind: "jinja", template: "{{ 1 + 2 }}-{{ 'x' | upper }}" }
          },
          tags: ["shared", "run"],
          labels: { who: "me" },
          job_variables: { cpu: 2 }
        })
        expect(res.status).toBe(201)
        expect(res.body).toMatchObject({
          flow_id: flowId,
          deployment_id: dep.id,
          deployment_version: "v7",
          parameters: { a: 1, b: 3, c: [1, 2], d: "3-X" },
          tags: ["dep", "shared", "run"],
          labels: { env: "prod", "prefect.flow.id": flowId, "prefect.deployment.id": dep.id, who: "me" },
          work_queue_name: "runs-q",
          work_queue_id: dep.work_queue_id,
          work_pool_name: "default-agent-pool",
          job_variables: { cpu: 2 },
          auto_scheduled: false,
          state_type: "SCHEDULED",
          state_name: "Scheduled"
        })
        expect(res.body.name).toMatch(/^[a-z]+-[a-z]+$/)
        expect(res.body.expected_start_time).toBe(res.body.state.state_details.scheduled_time)
        const pending = yield* createRun(dep.id, { state: { type: "PENDING" }, name: "now" })
        expect(pending.body).toMatchObject({ name: "now", state_type: "PENDING" })

        const first = yield* createRun(dep.id, { idempotency_key: "once" })
        const again = yield* createRun(dep.id, { idempotency_key: "once", parameters: { a: 9 } })
        expect([first.status, again.status]).toEqual([201, 200])
        expect(again.body.id).toBe(first.body.id)
        expect(again.body.parameters.a).toBe(1)

        expect((yield* createRun(MISSING)).body).toEqual({ detail: "Deployment not found" })
        const badJson = yield* createRun(dep.id, { parameters: { x: { __prefect_kind: "json", value: "{" } } })
        expect(badJson.status).toBe(400)
        expect(badJson.body.detail).toMatch(/^Error hydrating flow run parameters: Invalid JSON: /)
        const badJinja = yield* createRun(dep.id, { parameters: { x: { __prefect_kind: "jinja", template: "{% if %}" } } })
        expect(badJinja.status).toBe(400)
        expect(badJinja.body.detail).toMatch(/^Error hydrating flow run parameters: Invalid jinja: /)
        // A template reads nothing of the server.
        const probe = ok(yield* createRun(dep.id, { parameters: { x: { __prefect_kind: "jinja", template: "{{ x.constructor }}{{ ''.__class__ }}" } } }))
        expect(probe.parameters.x).toBe("")
        const extra = yield* createRun(dep.id, { unknown: 1 })
        expect(extra.status).toBe(422)
      })
    )

    it.effect("create_flow_run enforces the parameter schema, required parameters included", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-enforced")
        const dep = yield* makeDeployment({
          name: "e",
          flow_id: flowId,
          parameter_openapi_schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] }
        })
        const missing = yield* createRun(dep.id)
        expect(missing.status).toBe(409)
        expect(missing.body).toEqual({ detail: "Error creating flow run: Validation failed. Failure reason: 'n' is a required property" })
        const wrong = yield* createRun(dep.id, { parameters: { n: "one" } })
        expect(wrong.body).toEqual({
          detail: "Error creating flow run: Validation failed for field 'n'. Failure reason: 'one' is not of type 'integer'"
        })
        expect((yield* createRun(dep.id, { parameters: { n: "one" }, enforce_parameter_schema: false })).status).toBe(201)
        expect((yield* createRun(dep.id, { parameters: { n: 1 } })).status).toBe(201)
      })
    )

    it.effect("a queue named for a run must be in the deployment's pool", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-queue")
        const detached = yield* makeDeployment({ name: "no-pool", flow_id: flowId })
        const refused = yield* createRun(detached.id, { work_queue_name: "other" })
        expect(refused.status).toBe(400)
        expect(refused.body.detail).toBe(
          `Cannot create flow run in work queue other because deployment ${detached.id} is not associated with a work pool. Please remove work_pool_name and try again.`
        )
        const pooled = yield* makeDeployment({ name: "pooled", flow_id: flowId, work_queue_name: "runs-queue-main" })
        const run = ok(yield* createRun(pooled.id, { work_queue_name: "runs-queue-extra" }))
        expect(run).toMatchObject({ work_queue_name: "runs-queue-extra", work_pool_name: "default-agent-pool" })
        expect(run.work_queue_id).not.toBe(pooled.work_queue_id)
        // A second run names the queue the first made: the same queue.
        const again = ok(yield* createRun(pooled.id, { work_queue_name: "runs-queue-extra" }))
        expect(again.work_queue_id).toBe(run.work_queue_id)
        // A queue of that name in another pool is not the one: the run gets one in the deployment's pool.
        ok(yield* request("POST", "/work_pools/", { body: { name: "runs-other-pool" } }), 201)
        const elsewhere = ok(yield* request("POST", "/work_pools/runs-other-pool/queues/", { body: { name: "runs-queue-far" } }), 201)
        const near = ok(yield* createRun(pooled.id, { work_queue_name: "runs-queue-far" }))
        expect(near).toMatchObject({ work_queue_name: "runs-queue-far", work_pool_name: "default-agent-pool" })
        expect(near.work_queue_id).not.toBe(elsewhere.id)
        // In bulk, each run's queue is looked up by its own name.
        const bulk = ok(yield* request("POST", `/deployments/${pooled.id}/create_flow_run/bulk`, {
          body: [{ work_queue_name: "runs-queue-far" }, { work_queue_name: "runs-queue-extra" }, {}]
        }))
        const queuesOf = yield* Effect.forEach([0, 1, 2], (i) =>
          Effect.map(request("GET", `/flow_runs/${bulk.results[i].flow_run_id}`), (res) => ok(res).work_queue_id))
        expect(queuesOf).toEqual([near.work_queue_id, run.work_queue_id, pooled.work_queue_id])
      })
    )

    it.effect("a created run is answered as it is read afterwards, in a new queue too, over both routes", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-answered")
        const dep = yield* makeDeployment({ name: "answered", flow_id: flowId, work_queue_name: "answered-main", labels: { team: "a" } })
        // Lateness and run time are estimated when answered: equal up to the moments apart.
        const comparable = (run: Record<string, unknown>) => ({ ...run, estimated_start_time_delta: null, estimated_run_time: null })
        const made = [
          ok(yield* createRun(dep.id, { parameters: { x: 1 }, tags: ["t"] }), 201),
          ok(yield* createRun(dep.id, { work_queue_name: "answered-new" }), 201),
          ok(yield* createRun(dep.id, { state: { type: "PENDING", message: "go" } }), 201),
          ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, name: "direct", work_pool_name: "default-agent-pool" } }), 201)
        ]
        expect(made.map((run) => run.work_queue_name)).toEqual(["answered-main", "answered-new", "answered-main", "default"])
        for (const run of made) {
          expect(run.state.id).toBe(run.state_id)
          expect(comparable(run)).toEqual(comparable(ok(yield* request("GET", `/flow_runs/${run.id}`))))
        }
      })
    )

    it.effect("job variables must fit the work pool's job template", () =>
      Effect.gen(function* () {
        ok(yield* request("POST", "/work_pools/", {
          body: {
            name: "templated",
            type: "docker",
            base_job_template: {
              job_configuration: { image: "{{ image }}", cpu: "{{ cpu }}" },
              variables: {
                type: "object",
                properties: { image: { type: "string" }, cpu: { type: "integer", default: 1 } },
                required: ["image"]
              }
            }
          }
        }), 201)
        const flowId = yield* makeFlow("runs-templated")
        const bad = yield* request("POST", "/deployments/", {
          body: { name: "t", flow_id: flowId, work_pool_name: "templated", job_variables: { cpu: "many" } }
        })
        expect(bad.status).toBe(422)
        expect(bad.body).toEqual({
          detail: "Error creating deployment: Validation failed for field 'cpu'. Failure reason: 'many' is not of type 'integer'"
        })
        // The image may come with each run.
        const dep = yield* makeDeployment({ name: "t", flow_id: flowId, work_pool_name: "templated", job_variables: { cpu: 2 } })
        const patched = yield* request("PATCH", `/deployments/${dep.id}`, { body: { work_pool_name: "templated", job_variables: { cpu: "x" } } })
        expect(patched.status).toBe(409)
        expect(patched.body.detail).toBe(`Error creating deployment: <ValidationError: "'x' is not of type 'integer'">`)
        const noImage = yield* createRun(dep.id)
        expect(noImage.status).toBe(422)
        expect(noImage.body).toEqual({ detail: "Error creating flow run: Validation failed. Failure reason: 'image' is a required property" })
        const run = ok(yield* createRun(dep.id, { job_variables: { image: "python:3.12" } }))
        expect(run.job_variables).toEqual({ image: "python:3.12" })
      })
    )

    it.effect("create_flow_run/bulk creates each run or reports why not, at most 100", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-bulk")
        const dep = yield* makeDeployment({
          name: "b",
          flow_id: flowId,
          parameter_openapi_schema: { type: "object", properties: { n: { type: "integer" } } }
        })
        const res = yield* request("POST", `/deployments/${dep.id}/create_flow_run/bulk`, {
          body: [{ parameters: { n: 1 } }, { parameters: { n: "x" } }, { parameters: { n: { __prefect_kind: "json", value: "2" } } }]
        })
        expect(res.status).toBe(200)
        expect(res.body.results.map((r) => r.status)).toEqual(["CREATED", "FAILED", "CREATED"])
        expect(res.body.results[1]).toEqual({
          flow_run_id: null,
          status: "FAILED",
          error: "Parameter validation failed: Validation failed for field 'n'. Failure reason: 'x' is not of type 'integer'"
        })
        const created = yield* request("GET", `/flow_runs/${res.body.results[2].flow_run_id}`)
        expect(created.body.parameters).toEqual({ n: 2 })
        const tooMany = yield* request("POST", `/deployments/${MISSING}/create_flow_run/bulk`, { body: Array.from({ length: 101 }, () => ({})) })
        expect(tooMany.status).toBe(400)
        expect(tooMany.body).toEqual({ detail: "Cannot create more than 100 flow runs at once." })
        expect((yield* request("POST", `/deployments/${MISSING}/create_flow_run/bulk`, { body: [] })).status).toBe(404)
        expect((yield* request("POST", `/deployments/${dep.id}/create_flow_run/bulk`, { body: [] })).body).toEqual({ results: [] })
      })
    )

    it.effect("a run the database refuses (an infrastructure document that does not exist) fails alone and leaves no queue behind", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-refused")
        const dep = yield* makeDeployment({ name: "refused", flow_id: flowId, work_queue_name: "runs-refused-main" })
        const queues = () =>
          Effect.map(request("POST", "/work_pools/default-agent-pool/queues/filter", { body: {} }), (res) =>
            ok(res, 200).map((q) => q.name) as Array<string>)
        const before = yield* queues()
        const refused = yield* createRun(dep.id, { work_queue_name: "runs-refused-new", infrastructure_document_id: MISSING })
        expect(refused.status).toBe(409)
        expect(yield* queues()).toEqual(before)
        // In a bulk, the others are created and the refused one is reported.
        const bulk = ok(
          yield* request("POST", `/deployments/${dep.id}/create_flow_run/bulk`, {
            body: [{ name: "first" }, { infrastructure_document_id: MISSING, work_queue_name: "runs-refused-new" }, { name: "third" }]
          }),
          200
        )
        expect(bulk.results.map((r) => r.status)).toEqual(["CREATED", "FAILED", "CREATED"])
        expect(bulk.results[1].error).toMatch(/^Data integrity conflict/)
        expect(yield* queues()).toEqual(before)
        const names = ok(yield* request("POST", "/flow_runs/filter", { body: { deployments: { id: { any_: [dep.id] } } } }), 200)
        expect(names.map((r) => r.name).sort()).toEqual(["first", "third"])
      })
    )

    it.effect("get_scheduled_flow_runs answers due Scheduled runs soonest first and marks the deployments READY; the foreman undoes it", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-poll")
        const dep = yield* makeDeployment({ name: "poll", flow_id: flowId })
        const other = yield* makeDeployment({ name: "other", flow_id: flowId })
        const at = (seconds: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, seconds)).toISOString()
        const scheduled = (id: string, seconds: number, name: string) =>
          createRun(id, { name, state: { type: "SCHEDULED", state_details: { scheduled_time: at(seconds) } } })
        yield* scheduled(dep.id, 30, "late-one")
        yield* scheduled(dep.id, 10, "early-one")
        yield* scheduled(dep.id, 90, "far-one")
        yield* scheduled(other.id, 5, "others")
        yield* createRun(dep.id, { name: "running", state: { type: "RUNNING" } })
        const poll = (body: Record<string, unknown>) =>
          Effect.map(request("POST", "/deployments/get_scheduled_flow_runs", { body }), (res) => ok(res, 200).map((r) => r.name))
        expect(yield* poll({ deployment_ids: [dep.id], scheduled_before: at(60) })).toEqual(["early-one", "late-one"])
        expect(yield* poll({ deployment_ids: [dep.id], limit: 1 })).toEqual(["early-one"])
        expect(yield* poll({ deployment_ids: [dep.id, other.id, MISSING] })).toEqual(["others", "early-one", "late-one", "far-one"])
        expect(yield* poll({ deployment_ids: [] })).toEqual([])
        const polled = ok(yield* request("GET", `/deployments/${dep.id}`), 200)
        expect(polled.status).toBe("READY")
        expect(polled.last_polled).not.toBeNull()
        expect(polled.updated).toBe(dep.updated)

        yield* TestClock.adjust(Duration.seconds(30))
        yield* checkReadiness
        expect(ok(yield* request("GET", `/deployments/${dep.id}`), 200).status).toBe("READY")
        yield* TestClock.adjust(Duration.seconds(31))
        yield* checkReadiness
        expect(ok(yield* request("GET", `/deployments/${dep.id}`), 200).status).toBe("NOT_READY")
      })
    )

    it.effect("work_queue_check lists the queues that would take the deployment's runs", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-wq-check")
        const dep = yield* makeDeployment({ name: "w", flow_id: flowId, work_queue_name: "check-q" })
        const queues = ok(yield* request("GET", `/deployments/${dep.id}/work_queue_check`), 200)
        expect(queues.map((q) => q.name)).toContain("check-q")
        expect(queues[0]).toHaveProperty("priority")
        expect((yield* request("GET", `/deployments/${MISSING}/work_queue_check`)).status).toBe(404)
      })
    )

    it.effect("POST /flow_runs/ keeps a deployment id and puts the run in a named pool's queue", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("runs-direct")
        const dep = yield* makeDeployment({ name: "direct", flow_id: flowId, work_queue_name: "direct-q" })
        const run = ok(yield* request("POST", "/flow_runs/", {
          body: { flow_id: flowId, deployment_id: dep.id, work_pool_name: "default-agent-pool", work_queue_name: "direct-q" }
        }))
        expect(run).toMatchObject({ deployment_id: dep.id, work_queue_id: dep.work_queue_id, work_pool_name: "default-agent-pool" })
        const pooled = ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, work_pool_name: "default-agent-pool" } }))
        expect(pooled.work_queue_name).toBe("default")
        const noQueue = yield* request("POST", "/flow_runs/", {
          body: { flow_id: flowId, work_pool_name: "default-agent-pool", work_queue_name: "nope" }
        })
        expect(noQueue.status).toBe(404)
        expect(noQueue.body).toEqual({ detail: "Work pool queue 'default-agent-pool/nope' not found." })
        const noPool = yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, work_pool_name: "nowhere" } })
        expect(noPool.body).toEqual({ detail: 'Work pool "nowhere" not found.' })
        // Flow runs filter by their deployment's fields.
        const byDeployment = yield* request("POST", "/flow_runs/filter", { body: { deployments: { name: { any_: ["direct"] } } } })
        expect(byDeployment.body.map((r) => r.id)).toEqual([run.id])
      })
    )
  })
})
