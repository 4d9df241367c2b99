import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ok, makeFlow, makeDeployment } from "../support/api.ts"
import { blockDocument } from "../support/actions.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const readDeployment = (id: string) => Effect.map(request("GET", `/deployments/${id}`), (res) => ok(res, 200))

describe("deployments", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("creates a deployment (201) with the reference's defaults, and upserts by flow and name (200)", () =>
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
        // An upsert changes what it was sent and keeps the rest.
        const again = yield* request("POST", "/deployments/", {
          body: { name: "nightly", flow_id: flowId, description: "second", job_variables: {} }
        })
        expect(again.status).toBe(200)
        expect(again.body).toMatchObject({ id: created.body.id, description: "second", tags: ["a"], parameters: { x: 1 }, version: "1" })
        expect(again.body.created).toBe(created.body.created)
      })
    )

    it.effect("refuses bad bodies with the reference's statuses", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("dep-bad")
        const badName = yield* request("POST", "/deployments/", { body: { name: "a/b", flow_id: flowId } })
        expect(badName.status).toBe(422)
        expect(badName.body.detail[0]).toMatchObject({ loc: ["body", "name"] })
        const extra = yield* request("POST", "/deployments/", { body: { name: "x", flow_id: flowId, color: 1 } })
        expect(extra.body.detail[0]).toMatchObject({ loc: ["body", "color"], type: "extra_forbidden" })
        const zero = yield* request("POST", "/deployments/", { body: { name: "x", flow_id: flowId, concurrency_limit: 0 } })
        expect(zero.status).toBe(422)
        expect(zero.body.detail[0]).toMatchObject({ loc: ["body", "concurrency_limit"], type: "greater_than" })
        const both = yield* request("POST", "/deployments/", {
          body: { name: "x", flow_id: flowId, concurrency_limit: 2, global_concurrency_limit_id: MISSING }
        })
        expect(both.status).toBe(422)
        expect(both.body.detail[0].msg).toBe(
          "Value error, A deployment cannot have both a concurrency limit and a global concurrency limit."
        )
        const badCron = yield* request("POST", "/deployments/", {
          body: { name: "x", flow_id: flowId, schedules: [{ schedule: { cron: "not a cron" } }] }
        })
        expect(badCron.status).toBe(422)
        const tooMany = yield* request("POST", "/deployments/", {
          body: { name: "x", flow_id: flowId, schedules: [{ schedule: { interval: 60 }, max_scheduled_runs: 51 }] }
        })
        expect(tooMany.status).toBe(422)
        expect(tooMany.body.detail[0]).toMatchObject({
          loc: ["body", "schedules", 0, "max_scheduled_runs"],
          msg: "Value error, `max_scheduled_runs` must be less than or equal to 50."
        })
        const noFlow = yield* request("POST", "/deployments/", { body: { name: "x", flow_id: MISSING } })
        expect(noFlow.status).toBe(409)
        const noPool = yield* request("POST", "/deployments/", { body: { name: "x", flow_id: flowId, work_pool_name: "nowhere" } })
        expect(noPool.status).toBe(404)
        expect(noPool.body).toEqual({ detail: 'Work pool "nowhere" not found.' })
        const noLimit = yield* request("POST", "/deployments/", {
          body: { name: "x", flow_id: flowId, global_concurrency_limit_id: MISSING }
        })
        expect(noLimit.status).toBe(404)
        expect(noLimit.body).toEqual({ detail: "Concurrency limit not found" })
        // Nothing was stored by the refused requests.
        const count = yield* request("POST", "/deployments/count", { body: { flows: { id: { any_: [flowId] } } } })
        expect(count.body).toBe(0)
      })
    )

    it.effect("create names block documents that exist: an unknown storage or infrastructure one is the reference's 409", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("dep-blocks")
        const missing = (kind: string) =>
          `Error creating deployment. Could not find ${kind} block with id: ${MISSING}. This usually occurs when applying a deployment specification that was built against a different Prefect database / workspace.`
        const noStorage = yield* request("POST", "/deployments/", { body: { name: "b", flow_id: flowId, storage_document_id: MISSING } })
        expect(noStorage.status).toBe(409)
        expect(noStorage.body).toEqual({ detail: missing("storage") })
        const noInfrastructure = yield* request("POST", "/deployments/", {
          body: { name: "b", flow_id: flowId, infrastructure_document_id: MISSING, storage_document_id: MISSING }
        })
        expect(noInfrastructure.status).toBe(409)
        // The infrastructure document is looked for first.
        expect(noInfrastructure.body).toEqual({ detail: missing("infrastructure") })
        // Refused before anything was written, even the queue it named.
        const queued = yield* request("POST", "/deployments/", {
          body: { name: "b", flow_id: flowId, work_queue_name: "dep-blocks-queue", storage_document_id: MISSING }
        })
        expect(queued.status).toBe(409)
        expect((yield* request("POST", "/deployments/count", { body: { flows: { id: { any_: [flowId] } } } })).body).toBe(0)
        expect((yield* request("GET", "/work_queues/name/dep-blocks-queue")).status).toBe(404)

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
        expect((yield* readDeployment(created.body.id)).storage_document_id).toBe(document.id)
      })
    )

    it.effect("checks parameters against the schema when enforcement is asked for", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("dep-params")
        const schema = { type: "object", properties: { n: { type: "integer" }, s: { type: "string" } }, required: ["s"] }
        const bad = yield* request("POST", "/deployments/", {
          body: { name: "p", flow_id: flowId, parameter_openapi_schema: schema, parameters: { n: "x" }, enforce_parameter_schema: true }
        })
        expect(bad.status).toBe(422)
        expect(bad.body.detail[0].msg).toBe("Value error, Validation failed for field 'n'. Failure reason: 'x' is not of type 'integer'")
        // Missing required parameters are fine on a deployment: its runs may bring them.
        const dep = yield* makeDeployment({ name: "p", flow_id: flowId, parameter_openapi_schema: schema, parameters: { n: 1 } })
        const patch = yield* request("PATCH", `/deployments/${dep.id}`, { body: { parameters: { n: "y" } } })
        expect(patch.status).toBe(409)
        expect(patch.body).toEqual({
          detail: "Error updating deployment: Validation failed for field 'n'. Failure reason: 'y' is not of type 'integer'"
        })
        const noSchema = yield* makeDeployment({ name: "p2", flow_id: flowId, parameter_openapi_schema: null })
        const blocked = yield* request("PATCH", `/deployments/${noSchema.id}`, { body: { paused: true } })
        expect(blocked.status).toBe(409)
        expect(blocked.body.detail).toMatch(/^Error updating deployment: Cannot update parameters because parameter schema enforcement/)
        const relaxed = yield* request("PATCH", `/deployments/${noSchema.id}`, { body: { enforce_parameter_schema: false, parameters: { any: 1 } } })
        expect(relaxed.status).toBe(204)
        expect((yield* readDeployment(noSchema.id)).parameters).toEqual({ any: 1 })
        // PATCH hydrates __prefect_kind values before storing them.
        const hydrated = yield* request("PATCH", `/deployments/${dep.id}`, {
          body: { parameters: { n: { __prefect_kind: "json", value: "3" }, s: { __prefect_kind: "none", value: "v" } } }
        })
        expect(hydrated.status).toBe(204)
        expect((yield* readDeployment(dep.id)).parameters).toEqual({ n: 3, s: "v" })
        const badJson = yield* request("PATCH", `/deployments/${dep.id}`, {
          body: { parameters: { n: { __prefect_kind: "json", value: "{oops" } } }
        })
        expect(badJson.status).toBe(400)
        expect(badJson.body.detail).toMatch(/^Error hydrating deployment parameters: Invalid JSON: /)
        // null clears them: the deployment and its runs still read.
        expect((yield* request("PATCH", `/deployments/${noSchema.id}`, { body: { parameters: null } })).status).toBe(204)
        expect((yield* readDeployment(noSchema.id)).parameters).toEqual({})
        const run = yield* request("POST", `/deployments/${noSchema.id}/create_flow_run`, { body: {} })
        expect(run.status).toBe(201)
        expect(run.body.parameters).toEqual({})
      })
    )

    it.effect("reads by id and by flow and deployment name; 404 otherwise", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("dep-read")
        const dep = yield* makeDeployment({ name: "reader", flow_id: flowId })
        expect(yield* readDeployment(dep.id)).toEqual(dep)
        expect((yield* request("GET", "/deployments/name/dep-read/reader")).body).toEqual(dep)
        expect((yield* request("GET", "/deployments/name/dep-read/nobody")).body).toEqual({ detail: "Deployment not found" })
        const missing = yield* request("GET", `/deployments/${MISSING}`)
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual({ detail: "Deployment not found" })
        expect((yield* request("GET", "/deployments/not-a-uuid")).status).toBe(404)
      })
    )

    it.effect("filters, counts and paginates with deployment, flow and queue filters and sorts", () =>
      Effect.gen(function* () {
        const etl = yield* makeFlow("dep-filter-etl")
        const ml = yield* makeFlow("dep-filter-ml")
        yield* makeDeployment({ name: "b-load", flow_id: etl, tags: ["prod", "db"], work_queue_name: "filter-q" })
        yield* makeDeployment({ name: "a-train", flow_id: ml, tags: ["prod"], paused: true })
        yield* makeDeployment({ name: "c-report", flow_id: etl, tags: [] })
        const scope = { flows: { id: { any_: [etl, ml] } } }
        const names = (body: Record<string, unknown>) =>
          Effect.map(request("POST", "/deployments/filter", { body: { ...scope, ...body } }), (res) => ok(res, 200).map((d: any) => d.name))
        expect(yield* names({})).toEqual(["a-train", "b-load", "c-report"])
        expect(yield* names({ sort: "NAME_DESC" })).toEqual(["c-report", "b-load", "a-train"])
        expect(yield* names({ deployments: { tags: { all_: ["prod", "db"] } } })).toEqual(["b-load"])
        expect(yield* names({ deployments: { tags: { is_null_: true } } })).toEqual(["c-report"])
        expect(yield* names({ deployments: { paused: { eq_: true } } })).toEqual(["a-train"])
        expect(yield* names({ deployments: { name: { like_: "LOAD" } } })).toEqual(["b-load"])
        expect(yield* names({ deployments: { flow_or_deployment_name: { like_: "filter-ml" } } })).toEqual(["a-train"])
        expect(yield* names({ flows: { name: { any_: ["dep-filter-etl"] } } })).toEqual(["b-load", "c-report"])
        expect(yield* names({ work_pool_queues: { name: { any_: ["filter-q"] } } })).toEqual(["b-load"])
        expect(yield* names({ work_pools: { name: { any_: ["default-agent-pool"] } } })).toEqual(["b-load"])
        expect(yield* names({ deployments: { operator: "or_", paused: { eq_: true }, tags: { is_null_: true } } })).toEqual([
          "a-train",
          "c-report"
        ])
        expect(yield* names({ offset: 1, limit: 1 })).toEqual(["b-load"])
        expect((yield* request("POST", "/deployments/count", { body: { ...scope, deployments: { tags: { any_: ["prod"] } } } })).body).toBe(2)
        const page = yield* request("POST", "/deployments/paginate", { body: { ...scope, page: 2, limit: 2 } })
        expect(page.body).toMatchObject({ count: 3, limit: 2, pages: 2, page: 2 })
        expect(page.body.results.map((d: any) => d.name)).toEqual(["c-report"])
        const tooMany = yield* request("POST", "/deployments/filter", { body: { limit: 201 } })
        expect(tooMany.status).toBe(422)
        expect(tooMany.body).toEqual({ detail: "Invalid limit: must be less than or equal to 200." })
        const negative = yield* request("POST", "/deployments/filter", { body: { offset: -1 } })
        expect(negative.status).toBe(422)
        // Flows and flow runs can be filtered by their deployments too.
        const flows = yield* request("POST", "/flows/filter", { body: { deployments: { name: { any_: ["a-train"] } } } })
        expect(flows.body.map((f: any) => f.id)).toEqual([ml])
        const withoutDeployment = yield* request("POST", "/flows/filter", {
          body: { flows: { id: { any_: [etl, ml] }, deployment: { is_null_: true } } }
        })
        expect(withoutDeployment.body).toEqual([])
      })
    )

    it.effect("PATCH changes only what it is sent, resolves work queues, and keeps the deployment's concurrency limit", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("dep-patch")
        const dep = yield* makeDeployment({ name: "p", flow_id: flowId, tags: ["a"], version: "1", concurrency_limit: 2 })
        expect(dep.global_concurrency_limit).toMatchObject({ name: `deployment:${dep.id}`, limit: 2, active: true, active_slots: 0 })
        const res = yield* request("PATCH", `/deployments/${dep.id}`, {
          body: { description: "patched", work_queue_name: "patch-q", concurrency_limit: 5, job_variables: { image: "x" } }
        })
        expect(res.status).toBe(204)
        expect(res.text).toBe("")
        const after = yield* readDeployment(dep.id)
        expect(after).toMatchObject({
          description: "patched",
          tags: ["a"],
          version: "1",
          work_queue_name: "patch-q",
          work_pool_name: "default-agent-pool",
          job_variables: { image: "x" }
        })
        expect(after.global_concurrency_limit).toMatchObject({ id: dep.global_concurrency_limit.id, limit: 5 })
        expect(new Date(after.updated).getTime()).toBeGreaterThanOrEqual(new Date(dep.updated).getTime())
        yield* request("PATCH", `/deployments/${dep.id}`, { body: { concurrency_limit: null } })
        expect((yield* readDeployment(dep.id)).global_concurrency_limit).toBeNull()
        yield* request("PATCH", `/deployments/${dep.id}`, { body: { work_pool_name: null } })
        expect((yield* readDeployment(dep.id))).toMatchObject({ work_queue_id: null, work_pool_name: null })
        const noPool = yield* request("PATCH", `/deployments/${dep.id}`, { body: { work_pool_name: "nowhere" } })
        expect(noPool.status).toBe(404)
        expect(noPool.body).toEqual({ detail: 'Work pool "nowhere" not found.' })
        const missing = yield* request("PATCH", `/deployments/${MISSING}`, { body: {} })
        expect(missing.body).toEqual({ detail: "Deployment not found." })
        const extra = yield* request("PATCH", `/deployments/${dep.id}`, { body: { name: "renamed" } })
        expect(extra.status).toBe(422)
        const gcl = yield* request("PATCH", `/deployments/${dep.id}`, { body: { global_concurrency_limit_id: MISSING } })
        expect(gcl.status).toBe(404)
        expect(gcl.body).toEqual({ detail: "Concurrency limit not found" })
        const options = yield* request("PATCH", `/deployments/${dep.id}`, {
          body: { concurrency_options: { collision_strategy: "CANCEL_NEW", grace_period_seconds: 120 } }
        })
        expect(options.status).toBe(204)
        expect((yield* readDeployment(dep.id)).concurrency_options).toEqual({ collision_strategy: "CANCEL_NEW", grace_period_seconds: 120 })
        const badStrategy = yield* request("PATCH", `/deployments/${dep.id}`, { body: { concurrency_options: { collision_strategy: "WAIT" } } })
        expect(badStrategy.status).toBe(422)
      })
    )

    it.effect("PATCH sets every field of the spec's table", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("dep-patch-fields")
        const owner = yield* makeDeployment({ name: "owner", flow_id: flowId, concurrency_limit: 4 })
        const dep = yield* makeDeployment({ name: "fields", flow_id: flowId, enforce_parameter_schema: false })
        // The document ids must name a stored block document.
        const type = ok(yield* request("POST", "/block_types/", { body: { name: "Storage", slug: "dep-storage" } }), 201)
        const schema = ok(yield* request("POST", "/block_schemas/", { body: { block_type_id: type.id, fields: {} } }), 201)
        const blockId = ok(
          yield* request("POST", "/block_documents/", {
            body: { name: "dep-storage", block_type_id: type.id, block_schema_id: schema.id, data: {} }
          }),
          201
        ).id as string
        const cases: Array<[string, unknown, (d: any) => unknown, unknown]> = [
          ["version", "2.0", (d) => d.version, "2.0"],
          ["description", "about", (d) => d.description, "about"],
          ["paused", true, (d) => d.paused, true],
          ["paused", false, (d) => d.paused, false],
          ["schedules", [{ schedule: { interval: 600 }, slug: "ten" }], (d) => d.schedules.map((s: any) => [s.slug, s.schedule.interval]), [["ten", 600]]],
          ["concurrency_limit", 3, (d) => d.global_concurrency_limit?.limit, 3],
          ["concurrency_options", { collision_strategy: "ENQUEUE" }, (d) => d.concurrency_options, { collision_strategy: "ENQUEUE", grace_period_seconds: null }],
          ["global_concurrency_limit_id", owner.global_concurrency_limit.id, (d) => d.global_concurrency_limit?.name, `deployment:${owner.id}`],
          ["parameters", { p: [1, 2] }, (d) => d.parameters, { p: [1, 2] }],
          ["parameter_openapi_schema", { type: "object", properties: { p: { type: "array" } } }, (d) => d.parameter_openapi_schema.properties, { p: { type: "array" } }],
          ["tags", ["x", "y"], (d) => d.tags, ["x", "y"]],
          ["work_queue_name", "fields-q", (d) => [d.work_queue_name, d.work_pool_name], ["fields-q", "default-agent-pool"]],
          ["work_pool_name", "default-agent-pool", (d) => [d.work_queue_name, d.work_pool_name], ["default", "default-agent-pool"]],
          ["path", "/srv/flows", (d) => d.path, "/srv/flows"],
          ["job_variables", { env: { A: "1" } }, (d) => d.job_variables, { env: { A: "1" } }],
          ["pull_steps", [{ "prefect.deployments.steps.git_clone": { repository: "r" } }], (d) => d.pull_steps, [{ "prefect.deployments.steps.git_clone": { repository: "r" } }]],
          ["entrypoint", "flows.py:main", (d) => d.entrypoint, "flows.py:main"],
          ["storage_document_id", blockId, (d) => d.storage_document_id, blockId],
          ["infrastructure_document_id", blockId, (d) => d.infrastructure_document_id, blockId],
          ["enforce_parameter_schema", true, (d) => d.enforce_parameter_schema, true],
          ["version_info", { type: "git", version: "abc123" }, (d) => d.version, "2.0"]
        ]
        for (const [field, value, read, expected] of cases) {
          const res = yield* request("PATCH", `/deployments/${dep.id}`, { body: { [field]: value } })
          expect(res.status, `${field}: ${JSON.stringify(res.body)}`).toBe(204)
          expect(read(yield* readDeployment(dep.id)), field).toEqual(expected)
        }
        // Fields not sent were left alone all along.
        expect(yield* readDeployment(dep.id)).toMatchObject({ name: "fields", description: "about", tags: ["x", "y"], path: "/srv/flows" })
        for (const [field, value] of [
          ["version", 1],
          ["paused", "maybe"],
          ["tags", "x"],
          ["concurrency_limit", -1],
          ["concurrency_options", { collision_strategy: "ENQUEUE", grace_period_seconds: 10 }],
          ["global_concurrency_limit_id", "not-a-uuid"],
          ["schedules", [{ schedule: { interval: -5 } }]],
          ["schedules", [{ schedule: { cron: "* * *" } }]],
          ["schedules", [{ schedule: { rrule: "FREQ=NEVER" } }]],
          ["schedules", [{ schedule: { interval: 60, timezone: "Mars/Base" } }]],
          ["version_info", { type: "git" }]
        ] as const) {
          const res = yield* request("PATCH", `/deployments/${dep.id}`, { body: { [field]: value } })
          expect(res.status, `${field}: ${JSON.stringify(value)}`).toBe(422)
          expect(res.body.detail[0].loc[0], `${field}: ${JSON.stringify(value)}`).toBe("body")
        }
      })
    )

    it.effect("PATCH schedules: updates by slug, renames with replaces, keeps unmentioned ones, replaces unslugged ones", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("dep-patch-schedules")
        const dep = yield* makeDeployment({
          name: "s",
          flow_id: flowId,
          schedules: [
            { schedule: { interval: 3600 }, slug: "hourly" },
            { schedule: { cron: "0 9 * * *", timezone: "Europe/Berlin" }, slug: "morning", parameters: { a: 1 } }
          ]
        })
        const bySlug = (d: any) => Object.fromEntries(d.schedules.map((s: any) => [s.slug, s]))
        const before = bySlug(dep)
        const res = yield* request("PATCH", `/deployments/${dep.id}`, {
          body: {
            schedules: [
              { slug: "hourly", active: false },
              { slug: "evening", replaces: "morning", schedule: { cron: "0 18 * * *" } },
              { slug: "weekly", schedule: { interval: 604800 } }
            ]
          }
        })
        expect(res.status).toBe(204)
        const after = bySlug(yield* readDeployment(dep.id))
        expect(Object.keys(after).sort()).toEqual(["evening", "hourly", "weekly"])
        expect(after.hourly).toMatchObject({ id: before.hourly.id, active: false, schedule: before.hourly.schedule })
        expect(after.evening).toMatchObject({ id: before.morning.id, schedule: { cron: "0 18 * * *" }, parameters: {} })
        expect(after.weekly).toMatchObject({ active: true, schedule: { interval: 604800, timezone: "UTC" } })
        // Every existing schedule has a slug: a new one without a slug is refused.
        const noSlug = yield* request("PATCH", `/deployments/${dep.id}`, { body: { schedules: [{ schedule: { interval: 60 } }] } })
        // The reference's route refuses these itself (HTTPException): a plain `detail` message.
        expect(noSlug.status).toBe(422)
        expect(noSlug.body).toEqual({
          detail: "Please provide a slug for each schedule in your request to ensure schedules are updated correctly."
        })
        const twice = yield* request("PATCH", `/deployments/${dep.id}`, {
          body: { schedules: [{ slug: "x", replaces: "hourly" }, { slug: "y", replaces: "hourly" }] }
        })
        expect(twice.body).toEqual({ detail: "Multiple schedules have 'replaces' targeting the same slug: hourly" })
        const clash = yield* request("PATCH", `/deployments/${dep.id}`, { body: { schedules: [{ slug: "weekly", replaces: "hourly" }] } })
        expect(clash.body).toEqual({
          detail: "Cannot rename schedule from 'hourly' to 'weekly': a schedule with slug 'weekly' already exists."
        })
        const noConfig = yield* request("PATCH", `/deployments/${dep.id}`, { body: { schedules: [{ slug: "new" }] } })
        expect(noConfig.status).toBe(422)
        expect(noConfig.body).toEqual({ detail: "Unable to create new deployment schedules without a schedule configuration." })
        expect(Object.keys(bySlug(yield* readDeployment(dep.id))).sort()).toEqual(["evening", "hourly", "weekly"])

        // Without slugs, the list replaces the deployment's schedules; [] removes them all.
        const plain = yield* makeDeployment({ name: "plain", flow_id: flowId, schedules: [{ schedule: { interval: 60 } }] })
        yield* request("PATCH", `/deployments/${plain.id}`, {
          body: { schedules: [{ schedule: { interval: 120 } }, { schedule: { interval: 240 }, active: false }] }
        })
        const replaced = yield* readDeployment(plain.id)
        expect(replaced.schedules.map((s: any) => [s.schedule.interval, s.active]).sort()).toEqual([[120, true], [240, false]])
        yield* request("PATCH", `/deployments/${plain.id}`, { body: { schedules: [] } })
        expect((yield* readDeployment(plain.id)).schedules).toEqual([])
      })
    )

    it.effect("schedule routes: list, create (slugs unique), PATCH and DELETE one schedule, 404s", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("dep-schedule-routes")
        const dep = yield* makeDeployment({ name: "r", flow_id: flowId })
        const created = yield* request("POST", `/deployments/${dep.id}/schedules`, {
          body: [
            { schedule: { interval: 60 }, slug: "minutely", max_scheduled_runs: 5 },
            { schedule: { rrule: "FREQ=DAILY;BYHOUR=6" }, active: false }
          ]
        })
        expect(created.status).toBe(201)
        expect(created.body.map((s: any) => s.slug)).toEqual(["minutely", null])
        expect(created.body[0]).toMatchObject({ deployment_id: dep.id, max_scheduled_runs: 5, active: true, parameters: {} })
        expect(created.body[1].schedule).toEqual({ rrule: "FREQ=DAILY;BYHOUR=6", timezone: "UTC" })
        const dup = yield* request("POST", `/deployments/${dep.id}/schedules`, { body: [{ schedule: { interval: 30 }, slug: "minutely" }] })
        expect(dup.status).toBe(409)
        expect(dup.body).toEqual({ detail: "Schedule slugs must be unique within a deployment." })
        const list = yield* request("GET", `/deployments/${dep.id}/schedules`)
        expect(list.body).toHaveLength(2)
        const id = created.body[0].id
        const patched = yield* request("PATCH", `/deployments/${dep.id}/schedules/${id}`, { body: { active: false, parameters: { p: 1 } } })
        expect(patched.status).toBe(204)
        const stored = (yield* request("GET", `/deployments/${dep.id}/schedules`)).body.find((s: any) => s.id === id)
        expect(stored).toMatchObject({ active: false, parameters: { p: 1 }, slug: "minutely", max_scheduled_runs: 5 })
        expect((yield* request("PATCH", `/deployments/${dep.id}/schedules/${MISSING}`, { body: {} })).body).toEqual({
          detail: "Schedule not found."
        })
        expect((yield* request("GET", `/deployments/${MISSING}/schedules`)).body).toEqual({ detail: "Deployment not found." })
        expect((yield* request("DELETE", `/deployments/${dep.id}/schedules/${id}`)).status).toBe(204)
        expect((yield* request("DELETE", `/deployments/${dep.id}/schedules/${id}`)).status).toBe(404)
        expect((yield* request("GET", `/deployments/${dep.id}/schedules`)).body).toHaveLength(1)
      })
    )

    it.effect("pauses and resumes; deletes one or many, and a flow's deletion takes its deployments", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("dep-delete")
        const dep = yield* makeDeployment({ name: "d", flow_id: flowId, concurrency_limit: 1 })
        expect((yield* request("POST", `/deployments/${dep.id}/pause_deployment`)).status).toBe(200)
        expect((yield* request("POST", `/deployments/${dep.id}/pause_deployment`)).status).toBe(200)
        expect((yield* readDeployment(dep.id)).paused).toBe(true)
        expect((yield* request("POST", `/deployments/${dep.id}/resume_deployment`)).body).toBeNull()
        expect((yield* readDeployment(dep.id)).paused).toBe(false)
        expect((yield* request("POST", `/deployments/${MISSING}/pause_deployment`)).body).toEqual({ detail: "Deployment not found" })
        expect((yield* request("POST", `/deployments/${MISSING}/resume_deployment`)).status).toBe(404)

        expect((yield* request("DELETE", `/deployments/${dep.id}`)).status).toBe(204)
        expect((yield* request("GET", `/deployments/${dep.id}`)).status).toBe(404)
        expect((yield* request("DELETE", `/deployments/${dep.id}`)).body).toEqual({ detail: "Deployment not found" })

        const kept = yield* makeDeployment({ name: "keep", flow_id: flowId, tags: ["keep"] })
        yield* makeDeployment({ name: "go-1", flow_id: flowId, tags: ["go"] })
        yield* makeDeployment({ name: "go-2", flow_id: flowId, tags: ["go"] })
        const bulk = yield* request("POST", "/deployments/bulk_delete", { body: { deployments: { tags: { any_: ["go"] } }, limit: 1 } })
        expect(bulk.body.deleted).toHaveLength(1)
        const rest = yield* request("POST", "/deployments/bulk_delete", { body: { deployments: { tags: { any_: ["go"] } } } })
        expect(rest.body.deleted).toHaveLength(1)
        expect((yield* request("POST", "/deployments/bulk_delete", { body: { limit: 51 } })).status).toBe(422)

        expect((yield* request("DELETE", `/flows/${flowId}`)).status).toBe(204)
        expect((yield* request("GET", `/deployments/${kept.id}`)).status).toBe(404)
      })
    )
  })
})
