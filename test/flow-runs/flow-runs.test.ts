import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { Deployment } from "../../src/deployments/schemas.ts"
import { FlowRun } from "../../src/flow-runs/schemas.ts"
import { makeFlow, ok, okAs, once } from "../support/api.ts"
import { clientOf, type Json, request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const makeRun = (body: Record<string, unknown>) => Effect.map(request("POST", "/flow_runs/", { body }), (res) => okAs(FlowRun, res))
const readRun = (id: string) => Effect.flatMap(clientOf("flowRuns"), (flowRuns) => flowRuns.read({ path: { id } }))
const patchRun = (id: string, body: unknown) => request("PATCH", `/flow_runs/${id}`, { body })

/** A Pending run with parameters { a: 1 } and the tag x. */
const pendingRun = (flowName: string) => Effect.flatMap(makeFlow(flowName), (flowId) => makeRun({ flow_id: flowId, parameters: { a: 1 }, tags: ["x"] }))

/** A flow and a deployment of it in a docker pool whose template requires an integer expected_variable_1 and a string image. */
const templatedPool = Effect.gen(function* () {
  const pool = yield* request("POST", "/work_pools/", {
    body: {
      name: "patch-job-vars",
      type: "docker",
      base_job_template: {
        job_configuration: { thing_one: "{{ expected_variable_1 }}", image: "{{ image }}" },
        variables: {
          properties: { expected_variable_1: { title: "expected_variable_1", default: 0, type: "integer" }, image: { type: "string" } },
          required: ["expected_variable_1", "image"]
        }
      }
    }
  })
  expect(pool.status).toBe(201)
  const flowId = yield* makeFlow("runs-patch-job-vars")
  return { flowId }
}).pipe(once)

const deploymentOf = (body: Record<string, unknown>) => Effect.map(request("POST", "/deployments/", { body }), (res) => okAs(Deployment, res))
/** A Scheduled run of the deployment. */
const runOf = (deploymentId: string) =>
  Effect.map(request("POST", `/deployments/${deploymentId}/create_flow_run`, { body: {} }), (res) => okAs(FlowRun, res, 201))
const patchJobVariables = (id: string, job_variables: unknown) => patchRun(id, { job_variables })

/** Runs r1 … x5 of the flows <prefix>-alpha and <prefix>-beta, a second apart, with tags, states and times to filter by. */
const runsToFilter = (prefix: string) =>
  Effect.gen(function* () {
    const alpha = yield* makeFlow(`${prefix}-alpha`)
    const beta = yield* makeFlow(`${prefix}-beta`)
    const specs = [
      { flow_id: alpha, name: "r1", tags: ["red", "big"], state: { type: "SCHEDULED", state_details: { scheduled_time: "2031-01-03T00:00:00Z" } } },
      { flow_id: alpha, name: "r2", tags: ["red"], state: { type: "SCHEDULED", state_details: { scheduled_time: "2031-01-01T00:00:00Z" } } },
      { flow_id: beta, name: "r3", tags: [], idempotency_key: `${prefix}-k3` },
      { flow_id: beta, name: "r4", tags: ["blue"], state: { type: "RUNNING" } },
      { flow_id: beta, name: "x5", tags: ["blue", "big"], state: { type: "COMPLETED", name: "Cached" } }
    ]
    const made: Array<typeof FlowRun.Encoded> = []
    for (const spec of specs) {
      made.push(yield* makeRun(spec))
      yield* TestClock.adjust("1 second")
    }
    return { prefix, ids: made.map((run) => run.id), mine: { flows: { name: { any_: [`${prefix}-alpha`, `${prefix}-beta`] } } } }
  })
type RunsToFilter = Effect.Effect.Success<ReturnType<typeof runsToFilter>>

describe("flow runs", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    describe("create", () => {
      it.effect("creates a run (201) in Pending with a generated name", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("runs-create")
          const created = yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, idempotency_key: "once", parameters: { x: 1 }, tags: ["t"] } })
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
        }))

      it.effect("repeats by idempotency key within a flow (200, the first run), not across flows (201)", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("runs-idempotent")
          const run = yield* makeRun({ flow_id: flowId, idempotency_key: "once" })
          const again = yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, idempotency_key: "once", name: "other" } })
          expect(again.status).toBe(200)
          expect(again.body.id).toBe(run.id)
          expect(again.body.name).toBe(run.name)
          const otherFlow = yield* makeFlow("runs-idempotent-2")
          const sameKeyOtherFlow = yield* request("POST", "/flow_runs/", { body: { flow_id: otherFlow, idempotency_key: "once" } })
          expect(sameKeyOtherFlow.status).toBe(201)
          expect(sameKeyOtherFlow.body.id).not.toBe(run.id)
        }))

      it.effect("creates a Scheduled run with its scheduled time as expected and next scheduled start", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("runs-scheduled")
          const run = ok(yield* request("POST", "/flow_runs/", {
            body: { flow_id: flowId, name: "later", state: { type: "SCHEDULED", state_details: { scheduled_time: "2030-01-01T00:00:00Z" } } }
          }))
          expect(run).toMatchObject({
            name: "later",
            state_type: "SCHEDULED",
            state_name: "Scheduled",
            expected_start_time: "2030-01-01T00:00:00.000Z",
            next_scheduled_start_time: "2030-01-01T00:00:00.000Z",
            start_time: null
          })
          expect(run.state.state_details.scheduled_time).toBe("2030-01-01T00:00:00.000Z")
        }))

      const refusals: Array<readonly [string, (flowId: string) => Record<string, unknown>, number, ((body: Json) => void)?]> = [
        ["a field it does not know (422)", (flowId) => ({ flow_id: flowId, priority: 1 }), 422, (body) =>
          expect(body.detail[0]).toMatchObject({ loc: ["body", "priority"], type: "extra_forbidden" })],
        ["a state type there is not (422)", (flowId) => ({ flow_id: flowId, state: { type: "SLEEPING" } }), 422, (body) =>
          expect(body.detail[0]).toMatchObject({ loc: ["body", "state", "type"], type: "enum" })],
        ["no flow id (422)", () => ({}), 422, (body) => expect(body.detail[0]).toMatchObject({ loc: ["body", "flow_id"], type: "missing" })],
        ["a flow that does not exist (409)", () => ({ flow_id: MISSING }), 409],
        ["a work pool that does not exist (404)", (flowId) => ({ flow_id: flowId, work_pool_name: "nowhere" }), 404]
      ]
      for (const [title, body, status, check] of refusals) {
        it.effect(`refuses ${title}`, () =>
          Effect.gen(function* () {
            const res = yield* request("POST", "/flow_runs/", { body: body(yield* makeFlow("runs-bad")) })
            expect(res.status).toBe(status)
            check?.(res.body)
          }))
      }
    })

    describe("read and delete", () => {
      it.effect("reads a run by id", () =>
        Effect.gen(function* () {
          const run = yield* makeRun({ flow_id: yield* makeFlow("runs-read") })
          const read = yield* request("GET", `/flow_runs/${run.id}`)
          expect(read.status).toBe(200)
          expect(read.body.id).toBe(run.id)
          expect(read.body.state).toEqual(run.state)
        }))

      it.effect("answers 404 for an unknown id and for one that is not a UUID", () =>
        Effect.gen(function* () {
          const missing = yield* request("GET", `/flow_runs/${MISSING}`)
          expect(missing.status).toBe(404)
          expect(missing.body).toEqual({ detail: "Flow run not found" })
          expect((yield* request("GET", "/flow_runs/nope")).status).toBe(404)
        }))

      it.effect("deletes a run with 204, then it is gone", () =>
        Effect.gen(function* () {
          const run = yield* makeRun({ flow_id: yield* makeFlow("runs-delete") })
          expect((yield* request("DELETE", `/flow_runs/${run.id}`)).status).toBe(204)
          expect((yield* request("GET", `/flow_runs/${run.id}`)).status).toBe(404)
          expect((yield* request("DELETE", `/flow_runs/${run.id}`)).status).toBe(404)
        }))
    })

    describe("PATCH", () => {
      it.effect("updates every field of the spec's table and nothing else", () =>
        Effect.gen(function* () {
          const run = yield* pendingRun("runs-patch")
          const policy = { max_retries: 2, retry_delay_seconds: 1.5, retries: 3, retry_delay: 10, pause_keys: ["k1"], resuming: true, retry_type: "in_process" }
          const res = yield* patchRun(run.id, { name: "renamed", flow_version: "v2", parameters: { b: 2 }, empirical_policy: policy, tags: ["y", "z"], infrastructure_pid: "pid-42" })
          expect(res.status).toBe(204)
          expect((yield* request("GET", `/flow_runs/${run.id}`)).body).toMatchObject({
            name: "renamed",
            flow_version: "v2",
            parameters: { b: 2 },
            empirical_policy: policy,
            tags: ["y", "z"],
            infrastructure_pid: "pid-42",
            state_type: "PENDING",
            flow_id: run.flow_id
          })
        }))

      it.effect("leaves the fields it is not sent", () =>
        Effect.gen(function* () {
          const run = yield* pendingRun("runs-patch-partial")
          yield* patchRun(run.id, { name: "renamed" })
          expect((yield* patchRun(run.id, { tags: [] })).status).toBe(204)
          expect(yield* readRun(run.id)).toMatchObject({ name: "renamed", tags: [], parameters: { a: 1 } })
        }))

      it.effect("refuses job variables of a Pending run (400), a policy that does not decode and a field it does not take (422), an unknown run (404)", () =>
        Effect.gen(function* () {
          const run = yield* pendingRun("runs-patch-refused")
          const jobVariables = yield* patchRun(run.id, { job_variables: { cpu: 2 } })
          expect(jobVariables.status).toBe(400)
          expect(jobVariables.body).toEqual({ detail: "Job variables for a flow run in state PENDING cannot be updated" })
          const badPolicy = yield* patchRun(run.id, { empirical_policy: { retries: "many" } })
          expect(badPolicy.status).toBe(422)
          expect(badPolicy.body.detail[0]).toMatchObject({ loc: ["body", "empirical_policy", "retries"], type: "int_parsing", input: "many" })
          expect((yield* patchRun(run.id, { state_type: "RUNNING" })).status).toBe(422)
          expect((yield* patchRun(MISSING, { name: "x" })).status).toBe(404)
        }))
    })

    describe("PATCH job_variables of a Scheduled run of a deployment", () => {
      it.effect("are checked against its pool's template: what fits is stored (204), what does not is 422 and changes nothing", () =>
        Effect.gen(function* () {
          const { flowId } = yield* templatedPool
          const deployment = yield* deploymentOf({ name: "pooled", flow_id: flowId, work_pool_name: "patch-job-vars", job_variables: { image: "base" } })
          const run = yield* runOf(deployment.id)
          expect(run.state_type).toBe("SCHEDULED")
          expect((yield* patchJobVariables(run.id, { expected_variable_1: 100 })).status).toBe(204)
          expect((yield* readRun(run.id)).job_variables).toEqual({ expected_variable_1: 100 })
          const wrongType = yield* patchJobVariables(run.id, { expected_variable_1: "this_should_be_an_int" })
          expect(wrongType.status).toBe(422)
          expect(wrongType.body).toEqual({
            detail: "Error updating flow run: Validation failed for field 'expected_variable_1'. Failure reason: 'this_should_be_an_int' is not of type 'integer'"
          })
          expect((yield* readRun(run.id)).job_variables).toEqual({ expected_variable_1: 100 })
        }))

      it.effect("count the template's required variables, the run being where they end up", () =>
        Effect.gen(function* () {
          // The deployment's image filled the required image in the test above; this one has none.
          const { flowId } = yield* templatedPool
          const imageless = yield* deploymentOf({ name: "no-image", flow_id: flowId, work_pool_name: "patch-job-vars" })
          const bare = yield* makeRun({ flow_id: flowId, deployment_id: imageless.id, state: { type: "SCHEDULED" } })
          const missing = yield* patchJobVariables(bare.id, {})
          expect(missing.status).toBe(422)
          expect(missing.body).toEqual({ detail: "Error updating flow run: Validation failed. Failure reason: 'image' is a required property" })
          expect((yield* patchJobVariables(bare.id, { image: "mine" })).status).toBe(204)
        }))

      it.effect("of a deployment without a pool take anything: there is no template to check against", () =>
        Effect.gen(function* () {
          const { flowId } = yield* templatedPool
          const free = yield* runOf((yield* deploymentOf({ name: "poolless", flow_id: flowId })).id)
          expect((yield* patchJobVariables(free.id, { anything: ["goes"] })).status).toBe(204)
          expect((yield* readRun(free.id)).job_variables).toEqual({ anything: ["goes"] })
        }))

      it.effect("are refused for a run of no deployment, a run no longer Scheduled (400) and an unknown run (404)", () =>
        Effect.gen(function* () {
          const { flowId } = yield* templatedPool
          const loose = yield* makeRun({ flow_id: flowId, state: { type: "SCHEDULED" } })
          const noDeployment = yield* patchJobVariables(loose.id, { cpu: 1 })
          expect(noDeployment.status).toBe(400)
          expect(noDeployment.body).toEqual({ detail: "A deployment for the flow run could not be found" })
          const started = yield* runOf((yield* deploymentOf({ name: "started", flow_id: flowId })).id)
          expect((yield* request("POST", `/flow_runs/${started.id}/set_state`, { body: { state: { type: "PENDING" } } })).status).toBe(201)
          const pending = yield* patchJobVariables(started.id, { cpu: 1 })
          expect(pending.status).toBe(400)
          expect(pending.body).toEqual({ detail: "Job variables for a flow run in state PENDING cannot be updated" })
          expect((yield* patchJobVariables(MISSING, { cpu: 1 })).body).toEqual({ detail: "Flow run not found" })
        }))
    })

    describe("filter, count, paginate and bulk-delete", () => {
      const shared = once(runsToFilter("filter"))
      const names = (body: (runs: RunsToFilter) => Record<string, unknown>) =>
        Effect.gen(function* () {
          const runs = yield* shared
          const res = yield* request("POST", "/flow_runs/filter", { body: { ...runs.mine, sort: "NAME_ASC", ...body(runs) } })
          expect(res.status, JSON.stringify(res.body)).toBe(200)
          return res.body.map((r) => r.name)
        })
      const filters: Array<readonly [string, (runs: RunsToFilter) => Record<string, unknown>, Array<string>]> = [
        ["sorted by name", () => ({}), ["r1", "r2", "r3", "r4", "x5"]],
        ["sorted by id descending", () => ({ sort: "ID_DESC" }), ["x5", "r4", "r3", "r2", "r1"]],
        ["by flow name", (runs) => ({ flows: { name: { any_: [`${runs.prefix}-alpha`] } } }), ["r1", "r2"]],
        ["by any of some ids", (runs) => ({ flow_runs: { id: { any_: [runs.ids[0], runs.ids[3]] } } }), ["r1", "r4"]],
        ["by none of some ids", (runs) => ({ flow_runs: { id: { not_any_: [runs.ids[0]] } } }), ["r2", "r3", "r4", "x5"]],
        ["by a name like", () => ({ flow_runs: { name: { like_: "r" } } }), ["r1", "r2", "r3", "r4"]],
        ["by all of some tags", () => ({ flow_runs: { tags: { all_: ["red", "big"] } } }), ["r1"]],
        ["by any of some tags", () => ({ flow_runs: { tags: { any_: ["big", "blue"] } } }), ["r1", "r4", "x5"]],
        ["by having no tags", () => ({ flow_runs: { tags: { is_null_: true } } }), ["r3"]],
        ["by state type", () => ({ flow_runs: { state: { type: { any_: ["SCHEDULED"] } } } }), ["r1", "r2"]],
        ["by none of some state types", () => ({ flow_runs: { state: { type: { not_any_: ["SCHEDULED", "PENDING"] } } } }), ["r4", "x5"]],
        ["by state name", () => ({ flow_runs: { state: { name: { any_: ["Cached"] } } } }), ["x5"]],
        ["by state type or name", () => ({ flow_runs: { state: { operator: "or_", type: { any_: ["RUNNING"] }, name: { any_: ["Cached"] } } } }), ["r4", "x5"]],
        ["by having started", () => ({ flow_runs: { start_time: { is_null_: false } } }), ["r4", "x5"]],
        ["by having ended", () => ({ flow_runs: { end_time: { is_null_: false } } }), ["x5"]],
        ["by next scheduled start", () => ({ flow_runs: { next_scheduled_start_time: { before_: "2031-01-02T00:00:00Z" } } }), ["r2"]],
        ["by expected start", () => ({ flow_runs: { expected_start_time: { after_: "2031-01-02T00:00:00Z" } } }), ["r1"]],
        ["by idempotency key", (runs) => ({ flow_runs: { idempotency_key: { any_: [`${runs.prefix}-k3`] } } }), ["r3"]],
        ["by having no deployment and no parent task run", () => ({ flow_runs: { deployment_id: { is_null_: true }, parent_task_run_id: { is_null_: true } } }), ["r1", "r2", "r3", "r4", "x5"]],
        ["with criteria joined by or_", () => ({ flow_runs: { operator: "or_", name: { any_: ["r1"] }, tags: { all_: ["blue"] } } }), ["r1", "r4", "x5"]],
        ["sorted by expected start descending, limited", () => ({ sort: "EXPECTED_START_TIME_DESC", limit: 2 }), ["r1", "r2"]],
        ["sorted by next scheduled start, limited", () => ({ sort: "NEXT_SCHEDULED_START_TIME_ASC", limit: 2 }), ["r2", "r1"]],
        ["from an offset", () => ({ offset: 3 }), ["r4", "x5"]]
      ]
      for (const [title, body, expected] of filters) {
        it.effect(`filters ${title}`, () => Effect.map(names(body), (found) => expect(found).toEqual(expected)))
      }

      it.effect("refuses a criterion it does not know and a limit above 200 (422)", () =>
        Effect.gen(function* () {
          const unknown = yield* request("POST", "/flow_runs/filter", { body: { flow_runs: { colour: {} } } })
          expect(unknown.status).toBe(422)
          expect(unknown.body.detail[0]).toMatchObject({ loc: ["body", "flow_runs", "colour"], type: "extra_forbidden" })
          const tooMany = yield* request("POST", "/flow_runs/filter", { body: { limit: 201 } })
          expect(tooMany.status).toBe(422)
          expect(tooMany.body).toEqual({ detail: "Invalid limit: must be less than or equal to 200." })
        }))

      it.effect("counts the matching runs", () =>
        Effect.gen(function* () {
          const { mine } = yield* shared
          expect((yield* request("POST", "/flow_runs/count", { body: { ...mine, flow_runs: { tags: { any_: ["big"] } } } })).body).toBe(2)
        }))

      it.effect("paginates: count, limit, pages, page and that page's runs", () =>
        Effect.gen(function* () {
          const { mine } = yield* shared
          const page = yield* request("POST", "/flow_runs/paginate", { body: { ...mine, sort: "NAME_ASC", page: 2, limit: 2 } })
          expect(page.body).toMatchObject({ count: 5, limit: 2, pages: 3, page: 2 })
          expect(page.body.results.map((r) => r.name)).toEqual(["r3", "r4"])
        }))

      it.effect("answers pages of runs named outside ASCII, and empty pages, as JSON byte for byte", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow(`unicode-${crypto.randomUUID()}`)
          const names = ["día-é", "中文-运行", "emoji-😀-run"]
          for (const name of names) yield* makeRun({ flow_id: flowId, name, tags: ["ünïcode"] })
          const body = { flows: { id: { any_: [flowId] } }, sort: "NAME_ASC" }
          const page = yield* request("POST", "/flow_runs/filter", { body })
          expect(page.status).toBe(200)
          expect(page.headers.get("content-type")).toContain("application/json")
          expect(Number(page.headers.get("content-length"))).toBe(Buffer.byteLength(page.text))
          expect(page.body.map((r) => r.name)).toEqual([...names].sort())
          expect(page.body.every((r) => r.tags[0] === "ünïcode")).toBe(true)
          const paged = yield* request("POST", "/flow_runs/paginate", { body: { ...body, page: 1, limit: 2 } })
          expect(Number(paged.headers.get("content-length"))).toBe(Buffer.byteLength(paged.text))
          expect(paged.body).toMatchObject({ count: 3, limit: 2, pages: 2, page: 1 })
          expect(paged.body.results.map((r) => r.name)).toEqual([...names].sort().slice(0, 2))
          const none = { flows: { id: { any_: [MISSING] } } }
          const empty = yield* request("POST", "/flow_runs/filter", { body: none })
          expect([empty.status, empty.text]).toEqual([200, "[]"])
          const emptyPage = yield* request("POST", "/flow_runs/paginate", { body: { ...none, page: 1 } })
          expect(emptyPage.status).toBe(200)
          expect(emptyPage.body).toEqual({ results: [], count: 0, limit: 200, pages: 0, page: 1 })
        }))

      it.effect("bulk-deletes the matching runs, answering their ids", () =>
        Effect.gen(function* () {
          const { ids, mine } = yield* runsToFilter("deleted")
          // Within this test's runs: the shared ones are red too.
          const deleted = yield* request("POST", "/flow_runs/bulk_delete", { body: { flow_runs: { id: { any_: ids }, tags: { any_: ["red"] } } } })
          expect([...deleted.body.deleted].sort()).toEqual([ids[0], ids[1]].sort())
          expect((yield* request("POST", "/flow_runs/count", { body: mine })).body).toBe(3)
        }))
    })
  })
})
