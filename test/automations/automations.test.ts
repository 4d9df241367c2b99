import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { EventPersister } from "../../src/events/persister.ts"
import { makeDeployment, makeFlow, ok } from "../support/api.ts"
import { request } from "../support/server.ts"
import { testServer } from "../support/server.ts"

const reactive = (expect: Array<string>, extra: Record<string, unknown> = {}) => ({
  type: "event",
  posture: "Reactive",
  expect,
  match: { "prefect.resource.id": "prefect.flow-run.*" },
  ...extra
})

const automation = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  trigger: reactive(["prefect.flow-run.Failed"]),
  actions: [{ type: "do-nothing" }],
  ...extra
})

const create = (body: Record<string, unknown>) => request("POST", "/automations/", { body })
const created = (body: Record<string, unknown>) => Effect.map(create(body), (res) => ok(res, 201))
const read = (id: string) => Effect.map(request("GET", `/automations/${id}`), (res) => ok(res, 200))
const names = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/automations/filter", { body }), (res) => ok(res, 200).map((a: any) => a.name))
const step = TestClock.adjust("1 second")

describe("automations", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("are created (201) with the reference's defaults and new trigger ids, and read back", () =>
      Effect.gen(function* () {
        const clientId = "11111111-1111-4111-8111-111111111111"
        const body = yield* created({
          name: "compound",
          trigger: {
            type: "compound",
            require: "all",
            within: 60,
            triggers: [
              { ...reactive(["a.*"]), id: clientId },
              { type: "event", posture: "Proactive", expect: ["b"], for_each: ["prefect.resource.id", "prefect.resource.id"] }
            ]
          },
          actions: [{ type: "pause-deployment", source: "inferred", colour: "ignored" }]
        })
        expect(body).toMatchObject({ name: "compound", description: "", enabled: true, tags: [], actions_on_trigger: [], actions_on_resolve: [] })
        expect(body.actions).toEqual([{ type: "pause-deployment", source: "inferred", deployment_id: null }])
        const [first, second] = body.trigger.triggers
        expect(first.id).not.toBe(clientId)
        expect(first).toMatchObject({ type: "event", posture: "Reactive", threshold: 1, within: 0, after: [], for_each: [], match_related: {} })
        // A proactive trigger without a window watches 10 seconds; for_each names are a set.
        expect(second).toMatchObject({ posture: "Proactive", within: 10, for_each: ["prefect.resource.id"] })
        expect(yield* read(body.id)).toEqual(body)
        const missing = yield* request("GET", "/automations/00000000-0000-4000-8000-000000000000")
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual({ detail: "Automation not found" })
      }))

    it.effect("refuse what the reference refuses, with 422 naming the problem", () =>
      Effect.gen(function* () {
        const problem = (body: Record<string, unknown>) =>
          Effect.map(create(body), (res) => {
            expect(res.status, JSON.stringify(res.body)).toBe(422)
            return res.body.detail
          })
        const unknownType = yield* problem(automation("bad", { actions: [{ type: "launch-rockets" }] }))
        expect(unknownType).toEqual([
          expect.objectContaining({ loc: ["body", "actions", 0], type: "union_tag_invalid", msg: expect.stringContaining("'launch-rockets'") })
        ])
        expect(unknownType[0].msg).toContain("'pause-work-pool'")
        const noType = yield* problem(automation("bad", { actions: [{ deployment_id: null }] }))
        expect(noType).toEqual([expect.objectContaining({ loc: ["body", "actions", 0], type: "union_tag_not_found" })])

        const selected = yield* problem(automation("bad", { actions: [{ type: "pause-deployment" }] }))
        expect(selected).toEqual([expect.objectContaining({ loc: ["body", "actions", 0], msg: "Value error, deployment_id is required" })])
        const inferred = yield* problem(
          automation("bad", { actions: [{ type: "resume-work-pool", source: "inferred", work_pool_id: "11111111-1111-4111-8111-111111111111" }] })
        )
        expect(inferred[0].msg).toBe("Value error, work_pool_id is not allowed")

        const proactive = yield* problem(automation("bad", { trigger: { posture: "Proactive", expect: ["x"], within: 5 } }))
        expect(proactive[0].msg).toContain("`within` for Proactive triggers must be greater than or equal to 10 seconds")
        const posture = yield* problem(automation("bad", { trigger: { expect: ["x"] } }))
        expect(posture).toEqual([expect.objectContaining({ loc: ["body", "trigger", "posture"], type: "missing" })])
        const require = yield* problem(
          automation("bad", { trigger: { type: "compound", require: 3, within: null, triggers: [reactive(["a"]), reactive(["b"])] } })
        )
        expect(require[0].msg).toBe("Value error, require must be less than or equal to the number of triggers")
        const badTrigger = yield* problem(automation("bad", { trigger: { type: "sometimes", triggers: [] } }))
        expect(badTrigger[0]).toMatchObject({ loc: ["body", "trigger"], type: "union_tag_invalid" })

        const template = yield* problem(
          automation("bad", { actions: [{ type: "call-webhook", block_document_id: "11111111-1111-4111-8111-111111111111", payload: "{{ oops" }] })
        )
        expect(template[0].msg).toContain("'payload' is not a valid template")
        const state = yield* problem(automation("bad", { actions: [{ type: "change-flow-run-state" }] }))
        expect(state).toEqual([expect.objectContaining({ loc: ["body", "actions", 0, "state"], type: "missing" })])
        const parameters = yield* problem(
          automation("bad", {
            actions: [{ type: "run-deployment", deployment_id: "11111111-1111-4111-8111-111111111111", parameters: { x: { __prefect_kind: "jinja", template: "{% for %}" } } }]
          })
        )
        expect(parameters[0].msg).toContain("Invalid parameters")

        // Running a deployment whenever any flow run is scheduled would run it forever.
        const loop = yield* problem(
          automation("bad", {
            trigger: { posture: "Reactive", expect: ["prefect.flow-run.Scheduled"] },
            actions: [{ type: "run-deployment", source: "inferred" }]
          })
        )
        expect(loop[0].msg).toContain("infinite loop")
        const extra = yield* problem({ ...automation("bad"), colour: "blue" })
        expect(extra).toEqual([expect.objectContaining({ loc: ["body", "colour"], type: "extra_forbidden" })])

        // Compound triggers nest at most 10 deep.
        const nested = (depth: number, within: boolean) => {
          let trigger: Record<string, unknown> = { type: "event", posture: "Reactive", expect: ["x"] }
          for (let i = 1; i < depth; i++) trigger = { type: "compound", require: "all", triggers: [trigger], ...(within ? { within: null } : {}) }
          return trigger
        }
        ok(yield* request("POST", "/automations/", { body: automation("deep-enough", { trigger: nested(10, true) }) }), 201)
        expect(yield* problem(automation("bad", { trigger: nested(11, true) }))).toEqual([
          expect.objectContaining({ loc: ["body", "trigger"], msg: "Value error, Triggers may be nested at most 10 deep" })
        ])
        // Refused before it is decoded, quickly, however wrong the rest of it is.
        const started = Date.now()
        for (const within of [true, false]) {
          expect(yield* problem(automation("bad", { trigger: nested(480, within) }))).toEqual([
            { loc: ["body", "trigger"], type: "value_error", msg: "Value error, Triggers may be nested at most 10 deep", ctx: { error: {} } }
          ])
        }
        expect(Date.now() - started).toBeLessThan(1000)
        const count = yield* request("POST", "/automations/count")
        expect(ok(count, 200)).toBe(2)
      }))

    it.effect("PUT replaces the automation exactly (defaults for what is left out), PATCH switches it, DELETE removes it", () =>
      Effect.gen(function* () {
        yield* step
        const original = yield* created(
          automation("put-me", { description: "long words", tags: ["a"], enabled: false, actions_on_trigger: [{ type: "do-nothing" }] })
        )
        yield* step
        const put = yield* request("PUT", `/automations/${original.id}`, {
          body: { name: "put-me-2", trigger: reactive(["prefect.flow-run.Crashed"]), actions: [{ type: "cancel-flow-run" }] }
        })
        expect(put.status).toBe(204)
        const replaced = yield* read(original.id)
        expect(replaced).toMatchObject({
          id: original.id,
          name: "put-me-2",
          description: "",
          enabled: true,
          tags: [],
          actions: [{ type: "cancel-flow-run" }],
          actions_on_trigger: [],
          actions_on_resolve: []
        })
        expect(replaced.trigger.expect).toEqual(["prefect.flow-run.Crashed"])
        expect(replaced.trigger.id).not.toBe(original.trigger.id)
        expect(new Date(replaced.updated).getTime()).toBeGreaterThan(new Date(original.updated).getTime())
        expect(replaced.created).toBe(original.created)

        const invalid = yield* request("PUT", `/automations/${original.id}`, { body: { name: "no trigger", actions: [] } })
        expect(invalid.status).toBe(422)
        expect(invalid.body.detail).toEqual([expect.objectContaining({ loc: ["body", "trigger"], type: "missing" })])
        expect((yield* read(original.id)).name).toBe("put-me-2")
        const unknown = yield* request("PUT", "/automations/00000000-0000-4000-8000-000000000000", { body: automation("x") })
        expect(unknown.status).toBe(404)

        expect((yield* request("PATCH", `/automations/${original.id}`, { body: { enabled: false } })).status).toBe(204)
        expect((yield* read(original.id)).enabled).toBe(false)
        expect((yield* request("PATCH", `/automations/${original.id}`, { body: {} })).status).toBe(204)
        expect((yield* read(original.id)).enabled).toBe(true)
        expect((yield* request("PATCH", "/automations/00000000-0000-4000-8000-000000000000", { body: { enabled: true } })).status).toBe(404)

        expect((yield* request("DELETE", `/automations/${original.id}`)).status).toBe(204)
        expect((yield* request("GET", `/automations/${original.id}`)).status).toBe(404)
        expect((yield* request("DELETE", `/automations/${original.id}`)).status).toBe(404)
      }))

    it.effect("filter by name, creation and tags, sorted and paged; count", () =>
      Effect.gen(function* () {
        for (const [name, tags] of [["filter-b", ["x"]], ["filter-a", ["x", "y"]], ["filter-c", []]] as const) {
          yield* step
          yield* created(automation(name, { tags }))
        }
        const base = { automations: { name: { any_: ["filter-a", "filter-b", "filter-c"] } } }
        expect(yield* names(base)).toEqual(["filter-a", "filter-b", "filter-c"])
        expect(yield* names({ ...base, sort: "NAME_DESC" })).toEqual(["filter-c", "filter-b", "filter-a"])
        expect(yield* names({ ...base, sort: "CREATED_DESC", limit: 2 })).toEqual(["filter-c", "filter-a"])
        expect(yield* names({ ...base, offset: 1, limit: 1 })).toEqual(["filter-b"])
        expect(yield* names({ automations: { ...base.automations, tags: { all_: ["x", "y"] } } })).toEqual(["filter-a"])
        expect(yield* names({ automations: { ...base.automations, tags: { is_null_: true } } })).toEqual(["filter-c"])
        expect(yield* names({ automations: { ...base.automations, tags: { any_: ["y", "z"] } } })).toEqual(["filter-a"])
        const bad = yield* request("POST", "/automations/filter", { body: { limit: 201 } })
        expect(bad.status).toBe(422)
        const count = ok(yield* request("POST", "/automations/count"), 200)
        expect(count).toBeGreaterThanOrEqual(4)
      }))

    it.effect("relate to the deployments they run and the resource that owns them; owned-by deletes only owned ones", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("automated")
        const deployment = yield* makeDeployment({ name: "target", flow_id: flowId })
        const runs = yield* created(automation("runs-it", { actions: [{ type: "run-deployment", deployment_id: deployment.id }] }))
        const owned = yield* created(automation("owned", { owner_resource: `prefect.deployment.${deployment.id}` }))
        const related = ok(yield* request("GET", `/automations/related-to/prefect.deployment.${deployment.id}`), 200)
        expect(related.map((a: any) => a.name).sort()).toEqual(["owned", "runs-it"])

        // Replacing the actions moves the relation.
        yield* request("PUT", `/automations/${runs.id}`, { body: automation("runs-it") })
        const after = ok(yield* request("GET", `/automations/related-to/prefect.deployment.${deployment.id}`), 200)
        expect(after.map((a: any) => a.name)).toEqual(["owned"])

        yield* step
        const res = yield* request("DELETE", `/automations/owned-by/prefect.deployment.${deployment.id}`)
        expect(res.status).toBe(202)
        // The reference's declared JSON body: its handler returns nothing, which is `null`.
        expect(res.headers.get("content-type")).toBe("application/json")
        expect(res.text).toBe("null")
        expect((yield* request("GET", `/automations/${owned.id}`)).status).toBe(404)
        expect((yield* request("GET", `/automations/${runs.id}`)).status).toBe(200)
      }))

    it.effect("check run-deployment job variables against the deployment's work pool", () =>
      Effect.gen(function* () {
        const pool = ok(
          yield* request("POST", "/work_pools/", {
            body: {
              name: "typed-pool",
              base_job_template: {
                job_configuration: { image: "{{ image }}" },
                variables: { type: "object", properties: { image: { type: "string" } } }
              }
            }
          })
        )
        const flowId = yield* makeFlow("typed")
        const deployment = yield* makeDeployment({ name: "typed", flow_id: flowId, work_pool_name: pool.name })
        const action = (job_variables: Record<string, unknown>) => automation("jv", { actions: [{ type: "run-deployment", deployment_id: deployment.id, job_variables }] })
        const bad = yield* create(action({ image: 42 }))
        expect(bad.status).toBe(422)
        expect(bad.body.detail).toMatch(/^Error creating automation: /)
        expect((yield* create(action({ image: "python" }))).status).toBe(201)
        const missing = yield* create(automation("jv", { actions: [{ type: "run-deployment", deployment_id: "11111111-1111-4111-8111-111111111111", job_variables: { a: 1 } }] }))
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual({ detail: "Deployment not found." })
      }))

    it.effect("validate templates under /automations/templates/validate", () =>
      Effect.gen(function* () {
        expect((yield* request("POST", "/automations/templates/validate", { body: JSON.stringify("Hello {{ flow_run.name }}") })).status).toBe(204)
        const bad = yield* request("POST", "/automations/templates/validate", { body: JSON.stringify("{{ oops") })
        expect(bad.status).toBe(422)
        expect(bad.body.error).toMatchObject({ line: 1, source: "{{ oops" })
      }))

    it.effect("emit created, updated and deleted events carrying the automation", () =>
      Effect.gen(function* () {
        const body = yield* created(automation("evented"))
        yield* step
        yield* request("PATCH", `/automations/${body.id}`, { body: { enabled: false } })
        yield* step
        yield* request("DELETE", `/automations/${body.id}`)
        yield* Effect.flatMap(EventPersister, (p) => p.drain)
        const page = ok(
          yield* request("POST", "/events/filter", {
            body: { filter: { resource: { id: [`prefect.automation.${body.id}`] }, order: "ASC", occurred: { since: "1970-01-01T00:00:00Z" } } }
          }),
          200
        )
        expect(page.events.map((e: any) => e.event)).toEqual(["prefect.automation.created", "prefect.automation.updated", "prefect.automation.deleted"])
        expect(page.events[0].resource["prefect.resource.name"]).toBe("evented")
        expect(page.events[1].payload).toMatchObject({ id: body.id, enabled: false })
      }))
  })
})
