import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { blockDocument } from "../support/actions.ts"
import { idOf, makeDeployment, makeFlow, ok, once } from "../support/api.ts"
import { clientOf, type Json, request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

/** The deployment as the wire has it. */
const readDeployment = (id: string) => Effect.map(request("GET", `/deployments/${id}`), (res) => ok(res, 200))
/** The deployment as the typed client reads it. */
const readTyped = (id: string) => Effect.flatMap(clientOf("deployments"), (deployments) => deployments.read({ path: { id } }))
const countOfFlow = (flowId: string) =>
  Effect.map(request("POST", "/deployments/count", { body: { flows: { id: { any_: [flowId] } } } }), (res) => ok(res, 200))

/** A deployment on its own flow, for a test that changes it. */
const deploymentOf = (name: string, body: Record<string, unknown> = {}) =>
  Effect.flatMap(makeFlow(name), (flowId) => makeDeployment({ name, flow_id: flowId, ...body }))

describe("deployments", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    describe("create", () => {
      it.effect("creates a deployment (201) with the reference's defaults", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("dep-create", { labels: { team: "data" } })
          const created = yield* request("POST", "/deployments/", {
            body: { name: "nightly", flow_id: flowId, description: "first", tags: ["a"], parameters: { x: 1 }, version: "1" }
          })
          expect(created.status).toBe(201)
          expect(created.body).toMatchObject({
            name: "nightly",
            flow_id: flowId,
            description: "first",
            version: "1",
            paused: false,
            schedules: [],
            concurrency_limit: null,
            global_concurrency_limit: null,
            concurrency_options: null,
            job_variables: {},
            parameters: { x: 1 },
            tags: ["a"],
            labels: { team: "data", "prefect.flow.id": flowId },
            work_queue_name: null,
            work_queue_id: null,
            work_pool_name: null,
            last_polled: null,
            parameter_openapi_schema: {},
            pull_steps: [],
            status: "NOT_READY",
            enforce_parameter_schema: true,
            created_by: null,
            updated_by: null
          })
        }))

      it.effect("upserts by flow and name (200): changes what it was sent and keeps the rest", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("dep-upsert")
          const created = yield* request("POST", "/deployments/", {
            body: { name: "nightly", flow_id: flowId, description: "first", tags: ["a"], parameters: { x: 1 }, version: "1" }
          })
          const again = yield* request("POST", "/deployments/", { body: { name: "nightly", flow_id: flowId, description: "second", job_variables: {} } })
          expect(again.status).toBe(200)
          expect(again.body).toMatchObject({ id: created.body.id, description: "second", tags: ["a"], parameters: { x: 1 }, version: "1" })
          expect(again.body.created).toBe(created.body.created)
        }))

      it.effect("a concurrency_limit makes the deployment its own global limit, deployment:<id>", () =>
        Effect.gen(function* () {
          const dep = yield* deploymentOf("dep-own-limit", { concurrency_limit: 2 })
          expect(dep.global_concurrency_limit).toMatchObject({ name: `deployment:${dep.id}`, limit: 2, active: true, active_slots: 0 })
        }))
    })

    describe("refuses bad bodies with the reference's statuses, storing nothing", () => {
      const refusals: Array<readonly [string, Record<string, unknown>, number, ((body: Json) => void)?]> = [
        ["a name with a slash (422)", { name: "a/b" }, 422, (body) => expect(body.detail[0]).toMatchObject({ loc: ["body", "name"] })],
        ["a field the reference does not know (422)", { name: "x", color: 1 }, 422, (body) =>
          expect(body.detail[0]).toMatchObject({ loc: ["body", "color"], type: "extra_forbidden" })],
        ["a concurrency limit of 0 (422)", { name: "x", concurrency_limit: 0 }, 422, (body) =>
          expect(body.detail[0]).toMatchObject({ loc: ["body", "concurrency_limit"], type: "greater_than" })],
        ["both a concurrency limit and a global one (422)", { name: "x", concurrency_limit: 2, global_concurrency_limit_id: MISSING }, 422, (body) =>
          expect(body.detail[0].msg).toBe("Value error, A deployment cannot have both a concurrency limit and a global concurrency limit.")],
        ["a schedule with a bad cron (422)", { name: "x", schedules: [{ schedule: { cron: "not a cron" } }] }, 422],
        ["a schedule of more than 50 runs (422)", { name: "x", schedules: [{ schedule: { interval: 60 }, max_scheduled_runs: 51 }] }, 422, (body) =>
          expect(body.detail[0]).toMatchObject({
            loc: ["body", "schedules", 0, "max_scheduled_runs"],
            msg: "Value error, `max_scheduled_runs` must be less than or equal to 50."
          })],
        ["a flow that does not exist (409)", { name: "x", flow_id: MISSING }, 409],
        ["a work pool that does not exist (404)", { name: "x", work_pool_name: "nowhere" }, 404, (body) =>
          expect(body).toEqual({ detail: 'Work pool "nowhere" not found.' })],
        ["a global concurrency limit that does not exist (404)", { name: "x", global_concurrency_limit_id: MISSING }, 404, (body) =>
          expect(body).toEqual({ detail: "Concurrency limit not found" })]
      ]
      refusals.forEach(([title, body, status, check], i) =>
        it.effect(title, () =>
          Effect.gen(function* () {
            const flowId = yield* makeFlow(`dep-bad-${i}`)
            const res = yield* request("POST", "/deployments/", { body: { flow_id: flowId, ...body } })
            expect(res.status, JSON.stringify(res.body)).toBe(status)
            check?.(res.body)
            expect(yield* countOfFlow(flowId)).toBe(0)
          }))
      )
    })

    describe("the block documents a deployment names", () => {
      const missing = (kind: string) =>
        `Error creating deployment. Could not find ${kind} block with id: ${MISSING}. This usually occurs when applying a deployment specification that was built against a different Prefect database / workspace.`

      it.effect("an unknown storage document is the reference's 409", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("dep-no-storage")
          const noStorage = yield* request("POST", "/deployments/", { body: { name: "b", flow_id: flowId, storage_document_id: MISSING } })
          expect(noStorage.status).toBe(409)
          expect(noStorage.body).toEqual({ detail: missing("storage") })
        }))

      it.effect("an unknown infrastructure document is looked for first", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("dep-no-infrastructure")
          const noInfrastructure = yield* request("POST", "/deployments/", {
            body: { name: "b", flow_id: flowId, infrastructure_document_id: MISSING, storage_document_id: MISSING }
          })
          expect(noInfrastructure.status).toBe(409)
          expect(noInfrastructure.body).toEqual({ detail: missing("infrastructure") })
        }))

      it.effect("is refused before anything is written, even the queue it named", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("dep-blocks")
          const queued = yield* request("POST", "/deployments/", {
            body: { name: "b", flow_id: flowId, work_queue_name: "dep-blocks-queue", storage_document_id: MISSING }
          })
          expect(queued.status).toBe(409)
          expect(yield* countOfFlow(flowId)).toBe(0)
          expect((yield* request("GET", "/work_queues/name/dep-blocks-queue")).status).toBe(404)
        }))

      it.effect("documents that exist are linked (201); a PATCH to one that does not is the integrity 409 and keeps the link", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("dep-linked")
          const document = yield* blockDocument("secret", "dep-blocks-storage", { value: "s" })
          const created = yield* request("POST", "/deployments/", {
            body: { name: "b", flow_id: flowId, storage_document_id: document.id, infrastructure_document_id: document.id }
          })
          expect(created.status).toBe(201)
          expect(created.body).toMatchObject({ storage_document_id: document.id, infrastructure_document_id: document.id })
          // PATCH has no such check in the reference: the stored link refuses it, the integrity 409.
          const patched = yield* request("PATCH", `/deployments/${created.body.id}`, { body: { storage_document_id: MISSING } })
          expect(patched.status).toBe(409)
          expect(patched.body.detail).toContain("Data integrity conflict")
          expect((yield* readTyped(idOf(created.body))).storage_document_id).toBe(document.id)
        }))
    })

    describe("parameters", () => {
      const schema = { type: "object", properties: { n: { type: "integer" }, s: { type: "string" } }, required: ["s"] }
      /** A deployment whose schema enforcement is on; its parameters lack the required `s`, which its runs may bring. */
      const schemed = (name: string) => deploymentOf(name, { parameter_openapi_schema: schema, parameters: { n: 1 } })
      const schemaless = (name: string) => deploymentOf(name, { parameter_openapi_schema: null })

      it.effect("create checks them against the schema when enforcement is asked for (422)", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("dep-params")
          const bad = yield* request("POST", "/deployments/", {
            body: { name: "p", flow_id: flowId, parameter_openapi_schema: schema, parameters: { n: "x" }, enforce_parameter_schema: true }
          })
          expect(bad.status).toBe(422)
          expect(bad.body.detail[0].msg).toBe("Value error, Validation failed for field 'n'. Failure reason: 'x' is not of type 'integer'")
        }))

      it.effect("PATCH checks them against the schema (409)", () =>
        Effect.gen(function* () {
          const dep = yield* schemed("dep-params-patch")
          const patch = yield* request("PATCH", `/deployments/${dep.id}`, { body: { parameters: { n: "y" } } })
          expect(patch.status).toBe(409)
          expect(patch.body).toEqual({
            detail: "Error updating deployment: Validation failed for field 'n'. Failure reason: 'y' is not of type 'integer'"
          })
        }))

      it.effect("PATCH of a deployment that enforces a schema it does not have is 409", () =>
        Effect.gen(function* () {
          const noSchema = yield* schemaless("dep-params-blocked")
          const blocked = yield* request("PATCH", `/deployments/${noSchema.id}`, { body: { paused: true } })
          expect(blocked.status).toBe(409)
          expect(blocked.body.detail).toMatch(/^Error updating deployment: Cannot update parameters because parameter schema enforcement/)
        }))

      it.effect("PATCH turning enforcement off sets any parameters", () =>
        Effect.gen(function* () {
          const noSchema = yield* schemaless("dep-params-relaxed")
          const relaxed = yield* request("PATCH", `/deployments/${noSchema.id}`, { body: { enforce_parameter_schema: false, parameters: { any: 1 } } })
          expect(relaxed.status).toBe(204)
          expect((yield* readTyped(noSchema.id)).parameters).toEqual({ any: 1 })
        }))

      it.effect("PATCH hydrates __prefect_kind values before storing them", () =>
        Effect.gen(function* () {
          const dep = yield* schemed("dep-params-hydrated")
          const hydrated = yield* request("PATCH", `/deployments/${dep.id}`, {
            body: { parameters: { n: { __prefect_kind: "json", value: "3" }, s: { __prefect_kind: "none", value: "v" } } }
          })
          expect(hydrated.status).toBe(204)
          expect((yield* readTyped(dep.id)).parameters).toEqual({ n: 3, s: "v" })
        }))

      it.effect("PATCH with a value that does not hydrate is 400", () =>
        Effect.gen(function* () {
          const dep = yield* schemed("dep-params-bad-json")
          const badJson = yield* request("PATCH", `/deployments/${dep.id}`, { body: { parameters: { n: { __prefect_kind: "json", value: "{oops" } } } })
          expect(badJson.status).toBe(400)
          expect(badJson.body.detail).toMatch(/^Error hydrating deployment parameters: Invalid JSON: /)
        }))

      it.effect("PATCH with null clears them: the deployment and its runs still read", () =>
        Effect.gen(function* () {
          const noSchema = yield* schemaless("dep-params-cleared")
          yield* request("PATCH", `/deployments/${noSchema.id}`, { body: { enforce_parameter_schema: false, parameters: { any: 1 } } })
          expect((yield* request("PATCH", `/deployments/${noSchema.id}`, { body: { parameters: null } })).status).toBe(204)
          expect((yield* readTyped(noSchema.id)).parameters).toEqual({})
          const run = yield* request("POST", `/deployments/${noSchema.id}/create_flow_run`, { body: {} })
          expect(run.status).toBe(201)
          expect(run.body.parameters).toEqual({})
        }))
    })

    describe("read", () => {
      it.effect("by id", () =>
        Effect.gen(function* () {
          const dep = yield* deploymentOf("dep-read")
          expect(yield* readDeployment(dep.id)).toEqual(dep)
        }))

      it.effect("by flow and deployment name; an unknown name is 404", () =>
        Effect.gen(function* () {
          const dep = yield* deploymentOf("dep-read-name")
          expect((yield* request("GET", "/deployments/name/dep-read-name/dep-read-name")).body).toEqual(dep)
          expect((yield* request("GET", "/deployments/name/dep-read-name/nobody")).body).toEqual({ detail: "Deployment not found" })
        }))

      it.effect("an unknown id is 404 'Deployment not found', so is an id that is not a UUID", () =>
        Effect.gen(function* () {
          const missing = yield* request("GET", `/deployments/${MISSING}`)
          expect(missing.status).toBe(404)
          expect(missing.body).toEqual({ detail: "Deployment not found" })
          expect((yield* request("GET", "/deployments/not-a-uuid")).status).toBe(404)
        }))
    })

    describe("filter, count and paginate", () => {
      /** Deployments b-load (etl; prod, db; queue filter-q), a-train (ml; prod; paused) and c-report (etl; no tags), read only. */
      const filterSet = once(
        Effect.gen(function* () {
          const etl = yield* makeFlow("dep-filter-etl")
          const ml = yield* makeFlow("dep-filter-ml")
          yield* makeDeployment({ name: "b-load", flow_id: etl, tags: ["prod", "db"], work_queue_name: "filter-q" })
          yield* makeDeployment({ name: "a-train", flow_id: ml, tags: ["prod"], paused: true })
          yield* makeDeployment({ name: "c-report", flow_id: etl, tags: [] })
          return { etl, ml, scope: { flows: { id: { any_: [etl, ml] } } } }
        })
      )
      const names = (body: Record<string, unknown>) =>
        Effect.gen(function* () {
          const { scope } = yield* filterSet
          return ok(yield* request("POST", "/deployments/filter", { body: { ...scope, ...body } }), 200).map((d) => d.name)
        })

      const filters: Array<readonly [string, Record<string, unknown>, Array<string>]> = [
        ["sorted by name by default", {}, ["a-train", "b-load", "c-report"]],
        ["sorted by name descending", { sort: "NAME_DESC" }, ["c-report", "b-load", "a-train"]],
        ["by all of some tags", { deployments: { tags: { all_: ["prod", "db"] } } }, ["b-load"]],
        ["by having no tags", { deployments: { tags: { is_null_: true } } }, ["c-report"]],
        ["by paused", { deployments: { paused: { eq_: true } } }, ["a-train"]],
        ["by a name like, in any case", { deployments: { name: { like_: "LOAD" } } }, ["b-load"]],
        ["by a flow or deployment name like", { deployments: { flow_or_deployment_name: { like_: "filter-ml" } } }, ["a-train"]],
        ["by their flow's name", { flows: { name: { any_: ["dep-filter-etl"] } } }, ["b-load", "c-report"]],
        ["by their work queue", { work_pool_queues: { name: { any_: ["filter-q"] } } }, ["b-load"]],
        ["by their work pool", { work_pools: { name: { any_: ["default-agent-pool"] } } }, ["b-load"]],
        ["with criteria joined by or_", { deployments: { operator: "or_", paused: { eq_: true }, tags: { is_null_: true } } }, ["a-train", "c-report"]],
        ["paged by offset and limit", { offset: 1, limit: 1 }, ["b-load"]]
      ]
      for (const [title, body, expected] of filters) {
        it.effect(`filters ${title}`, () => Effect.map(names(body), (found) => expect(found).toEqual(expected)))
      }

      it.effect("counts with the same filters", () =>
        Effect.gen(function* () {
          const { scope } = yield* filterSet
          expect((yield* request("POST", "/deployments/count", { body: { ...scope, deployments: { tags: { any_: ["prod"] } } } })).body).toBe(2)
        }))

      it.effect("paginates: count, limit, pages, page and that page's results", () =>
        Effect.gen(function* () {
          const { scope } = yield* filterSet
          const page = yield* request("POST", "/deployments/paginate", { body: { ...scope, page: 2, limit: 2 } })
          expect(page.body).toMatchObject({ count: 3, limit: 2, pages: 2, page: 2 })
          expect(page.body.results.map((d) => d.name)).toEqual(["c-report"])
        }))

      it.effect("refuses a limit above 200 and a negative offset (422)", () =>
        Effect.gen(function* () {
          const tooMany = yield* request("POST", "/deployments/filter", { body: { limit: 201 } })
          expect(tooMany.status).toBe(422)
          expect(tooMany.body).toEqual({ detail: "Invalid limit: must be less than or equal to 200." })
          const negative = yield* request("POST", "/deployments/filter", { body: { offset: -1 } })
          expect(negative.status).toBe(422)
        }))

      it.effect("flows are filtered by their deployments too", () =>
        Effect.gen(function* () {
          const { etl, ml } = yield* filterSet
          const flows = yield* request("POST", "/flows/filter", { body: { deployments: { name: { any_: ["a-train"] } } } })
          expect(flows.body.map((f) => f.id)).toEqual([ml])
          const withoutDeployment = yield* request("POST", "/flows/filter", { body: { flows: { id: { any_: [etl, ml] }, deployment: { is_null_: true } } } })
          expect(withoutDeployment.body).toEqual([])
        }))
    })

    describe("pause, resume and delete", () => {
      it.effect("pause is 200, twice too; resume answers null; the deployment reads paused, then not", () =>
        Effect.gen(function* () {
          const dep = yield* deploymentOf("dep-pause", { concurrency_limit: 1 })
          expect((yield* request("POST", `/deployments/${dep.id}/pause_deployment`)).status).toBe(200)
          expect((yield* request("POST", `/deployments/${dep.id}/pause_deployment`)).status).toBe(200)
          expect((yield* readTyped(dep.id)).paused).toBe(true)
          expect((yield* request("POST", `/deployments/${dep.id}/resume_deployment`)).body).toBeNull()
          expect((yield* readTyped(dep.id)).paused).toBe(false)
        }))

      it.effect("pausing or resuming an unknown deployment is 404", () =>
        Effect.gen(function* () {
          expect((yield* request("POST", `/deployments/${MISSING}/pause_deployment`)).body).toEqual({ detail: "Deployment not found" })
          expect((yield* request("POST", `/deployments/${MISSING}/resume_deployment`)).status).toBe(404)
        }))

      it.effect("DELETE removes the deployment (204); once it is gone, 404", () =>
        Effect.gen(function* () {
          const dep = yield* deploymentOf("dep-delete", { concurrency_limit: 1 })
          expect((yield* request("DELETE", `/deployments/${dep.id}`)).status).toBe(204)
          expect((yield* request("GET", `/deployments/${dep.id}`)).status).toBe(404)
          expect((yield* request("DELETE", `/deployments/${dep.id}`)).body).toEqual({ detail: "Deployment not found" })
        }))

      it.effect("bulk_delete deletes what the filter matches, at most its limit; a limit above 50 is 422", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("dep-bulk-delete")
          const kept = yield* makeDeployment({ name: "keep", flow_id: flowId, tags: ["keep"] })
          yield* makeDeployment({ name: "go-1", flow_id: flowId, tags: ["go"] })
          yield* makeDeployment({ name: "go-2", flow_id: flowId, tags: ["go"] })
          const bulk = yield* request("POST", "/deployments/bulk_delete", { body: { deployments: { tags: { any_: ["go"] } }, limit: 1 } })
          expect(bulk.body.deleted).toHaveLength(1)
          const rest = yield* request("POST", "/deployments/bulk_delete", { body: { deployments: { tags: { any_: ["go"] } } } })
          expect(rest.body.deleted).toHaveLength(1)
          expect((yield* request("POST", "/deployments/bulk_delete", { body: { limit: 51 } })).status).toBe(422)
          expect((yield* request("GET", `/deployments/${kept.id}`)).status).toBe(200)
        }))

      it.effect("deleting a flow deletes its deployments", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("dep-flow-deleted")
          const kept = yield* makeDeployment({ name: "keep", flow_id: flowId, tags: ["keep"] })
          expect((yield* request("DELETE", `/flows/${flowId}`)).status).toBe(204)
          expect((yield* request("GET", `/deployments/${kept.id}`)).status).toBe(404)
        }))
    })
  })
})
