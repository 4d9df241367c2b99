import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { EventPersister } from "../../src/events/persister.ts"
import { Automation } from "../../src/automations/schemas.ts"
import { WorkPool } from "../../src/work-pools/schemas.ts"
import { idOf, makeDeployment, makeFlow, ok, okAs } from "../support/api.ts"
import { clientOf, type Json, request, testServer } from "../support/server.ts"

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
const created = (body: Record<string, unknown>) => Effect.map(create(body), (res) => okAs(Automation, res, 201))
/** The automation as the wire has it. */
const read = (id: string) => Effect.map(request("GET", `/automations/${id}`), (res) => ok(res, 200))
/** The automation as the typed client reads it. */
const readTyped = (id: string) => Effect.flatMap(clientOf("automations"), (automations) => automations.read({ path: { id } }))
const names = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/automations/filter", { body }), (res) => ok(res, 200).map((a) => a.name))
const step = TestClock.adjust("1 second")
const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"
const SOME_ID = "11111111-1111-4111-8111-111111111111"

/** The `detail` of a 422 answering the creation of `body`. */
const problem = (body: Record<string, unknown>) =>
  Effect.map(create(body), (res) => {
    expect(res.status, JSON.stringify(res.body)).toBe(422)
    return res.body.detail
  })

/** A trigger `depth` levels deep: compound triggers around one event trigger. */
const nested = (depth: number, within: boolean) => {
  let trigger: Record<string, unknown> = { type: "event", posture: "Reactive", expect: ["x"] }
  for (let i = 1; i < depth; i++) trigger = { type: "compound", require: "all", triggers: [trigger], ...(within ? { within: null } : {}) }
  return trigger
}

/** An automation with every field set away from its default, created a second before the clock's now. */
const putMe = (name: string) =>
  Effect.gen(function* () {
    yield* step
    const original = yield* created(
      automation(name, { description: "long words", tags: ["a"], enabled: false, actions_on_trigger: [{ type: "do-nothing" }] })
    )
    yield* step
    return original
  })

/** Three automations `<prefix>-b` (tag x), `<prefix>-a` (x, y), `<prefix>-c` (none), created a second apart; the filter naming them. */
const threeTagged = (prefix: string) =>
  Effect.gen(function* () {
    for (const [name, tags] of [["b", ["x"]], ["a", ["x", "y"]], ["c", []]] as const) {
      yield* step
      yield* created(automation(`${prefix}-${name}`, { tags }))
    }
    return { automations: { name: { any_: [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`] } } }
  })

/** A deployment, one automation running it and one it owns. */
const deploymentWithAutomations = (name: string) =>
  Effect.gen(function* () {
    const flowId = yield* makeFlow(name)
    const deployment = yield* makeDeployment({ name, flow_id: flowId })
    const runs = yield* created(automation(`runs-${name}`, { actions: [{ type: "run-deployment", deployment_id: deployment.id }] }))
    const owned = yield* created(automation(`owned-${name}`, { owner_resource: `prefect.deployment.${deployment.id}` }))
    return { deployment, runs, owned }
  })

const relatedNames = (deploymentId: string) =>
  Effect.flatMap(clientOf("automations"), (automations) =>
    Effect.map(automations.relatedTo({ path: { resource_id: `prefect.deployment.${deploymentId}` } }), (related) =>
      related.map((a) => a.name).sort()
    )
  )

/** Job variables into a run-deployment action, for a deployment on a pool whose template types `image` as a string. */
const typedPoolAction = (name: string) =>
  Effect.gen(function* () {
    const pool = okAs(
      WorkPool,
      yield* request("POST", "/work_pools/", {
        body: {
          name: `${name}-pool`,
          base_job_template: {
            job_configuration: { image: "{{ image }}" },
            variables: { type: "object", properties: { image: { type: "string" } } }
          }
        }
      })
    )
    const flowId = yield* makeFlow(name)
    const deployment = yield* makeDeployment({ name, flow_id: flowId, work_pool_name: pool.name })
    return (job_variables: Record<string, unknown>) =>
      automation("jv", { actions: [{ type: "run-deployment", deployment_id: deployment.id, job_variables }] })
  })
describe("automations", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    describe("create and read", () => {
      it.effect("are created (201) with the reference's defaults and new trigger ids, and read back", () =>
        Effect.gen(function* () {
          const clientId = SOME_ID
          const body = ok(
            yield* create({
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
            }),
            201
          )
          expect(body).toMatchObject({ name: "compound", description: "", enabled: true, tags: [], actions_on_trigger: [], actions_on_resolve: [] })
          expect(body.actions).toEqual([{ type: "pause-deployment", source: "inferred", deployment_id: null }])
          const [first, second] = body.trigger.triggers
          expect(first!.id).not.toBe(clientId)
          expect(first).toMatchObject({ type: "event", posture: "Reactive", threshold: 1, within: 0, after: [], for_each: [], match_related: {} })
          // A proactive trigger without a window watches 10 seconds; for_each names are a set.
          expect(second).toMatchObject({ posture: "Proactive", within: 10, for_each: ["prefect.resource.id"] })
          expect(yield* read(idOf(body))).toEqual(body)
        }))

      it.effect("reading an unknown automation is 404 'Automation not found'", () =>
        Effect.gen(function* () {
          const missing = yield* request("GET", `/automations/${UNKNOWN_ID}`)
          expect(missing.status).toBe(404)
          expect(missing.body).toEqual({ detail: "Automation not found" })
        }))
    })

    describe("refuse what the reference refuses, with 422 naming the problem", () => {
      const refusals: Array<readonly [string, Record<string, unknown>, (detail: Json) => void]> = [
        ["an action of an unknown type, listing the types there are", automation("bad", { actions: [{ type: "launch-rockets" }] }), (detail) => {
          expect(detail).toEqual([
            expect.objectContaining({ loc: ["body", "actions", 0], type: "union_tag_invalid", msg: expect.stringContaining("'launch-rockets'") })
          ])
          expect(detail[0].msg).toContain("'pause-work-pool'")
        }],
        ["an action without a type", automation("bad", { actions: [{ deployment_id: null }] }), (detail) =>
          expect(detail).toEqual([expect.objectContaining({ loc: ["body", "actions", 0], type: "union_tag_not_found" })])],
        ["a selected action without its target's id", automation("bad", { actions: [{ type: "pause-deployment" }] }), (detail) =>
          expect(detail).toEqual([expect.objectContaining({ loc: ["body", "actions", 0], msg: "Value error, deployment_id is required" })])],
        ["an inferred action with a target's id", automation("bad", { actions: [{ type: "resume-work-pool", source: "inferred", work_pool_id: SOME_ID }] }), (detail) =>
          expect(detail[0].msg).toBe("Value error, work_pool_id is not allowed")],
        ["a proactive trigger watching less than 10 seconds", automation("bad", { trigger: { posture: "Proactive", expect: ["x"], within: 5 } }), (detail) =>
          expect(detail[0].msg).toContain("`within` for Proactive triggers must be greater than or equal to 10 seconds")],
        ["an event trigger without a posture", automation("bad", { trigger: { expect: ["x"] } }), (detail) =>
          expect(detail).toEqual([expect.objectContaining({ loc: ["body", "trigger", "posture"], type: "missing" })])],
        [
          "a compound trigger requiring more triggers than it has",
          automation("bad", { trigger: { type: "compound", require: 3, within: null, triggers: [reactive(["a"]), reactive(["b"])] } }),
          (detail) => expect(detail[0].msg).toBe("Value error, require must be less than or equal to the number of triggers")
        ],
        ["a trigger of an unknown type", automation("bad", { trigger: { type: "sometimes", triggers: [] } }), (detail) =>
          expect(detail[0]).toMatchObject({ loc: ["body", "trigger"], type: "union_tag_invalid" })],
        [
          "a webhook payload that is not a valid template",
          automation("bad", { actions: [{ type: "call-webhook", block_document_id: SOME_ID, payload: "{{ oops" }] }),
          (detail) => expect(detail[0].msg).toContain("'payload' is not a valid template")
        ],
        ["a change-flow-run-state action without a state", automation("bad", { actions: [{ type: "change-flow-run-state" }] }), (detail) =>
          expect(detail).toEqual([expect.objectContaining({ loc: ["body", "actions", 0, "state"], type: "missing" })])],
        [
          "run-deployment parameters holding an invalid template",
          automation("bad", {
            actions: [{ type: "run-deployment", deployment_id: SOME_ID, parameters: { x: { __prefect_kind: "jinja", template: "{% for %}" } } }]
          }),
          (detail) => expect(detail[0].msg).toContain("Invalid parameters")
        ],
        [
          // It would run the deployment forever.
          "running a deployment inferred from any scheduled flow run",
          automation("bad", { trigger: { posture: "Reactive", expect: ["prefect.flow-run.Scheduled"] }, actions: [{ type: "run-deployment", source: "inferred" }] }),
          (detail) => expect(detail[0].msg).toContain("infinite loop")
        ],
        ["a field the reference does not know", { ...automation("bad"), colour: "blue" }, (detail) =>
          expect(detail).toEqual([expect.objectContaining({ loc: ["body", "colour"], type: "extra_forbidden" })])]
      ]
      for (const [title, body, check] of refusals) {
        it.effect(title, () => Effect.map(problem(body), check))
      }

      it.effect("compound triggers nested more than 10 deep (10 are taken)", () =>
        Effect.gen(function* () {
          ok(yield* create(automation("deep-enough", { trigger: nested(10, true) })), 201)
          expect(yield* problem(automation("bad", { trigger: nested(11, true) }))).toEqual([
            expect.objectContaining({ loc: ["body", "trigger"], msg: "Value error, Triggers may be nested at most 10 deep" })
          ])
        }))

      it.effect("a trigger nested hundreds deep before decoding it, quickly, however wrong the rest of it is", () =>
        Effect.gen(function* () {
          const started = Date.now()
          for (const within of [true, false]) {
            expect(yield* problem(automation("bad", { trigger: nested(480, within) }))).toEqual([
              { loc: ["body", "trigger"], type: "value_error", msg: "Value error, Triggers may be nested at most 10 deep", ctx: { error: {} } }
            ])
          }
          expect(Date.now() - started).toBeLessThan(1000)
        }))

      // Runs after the tests above: the two automations there are were created by "compound" and "deep-enough".
      it.effect("none of the refused automations is stored", () =>
        Effect.gen(function* () {
          expect(yield* (yield* clientOf("automations")).count()).toBe(2)
        }))
    })

    describe("PUT, PATCH and DELETE", () => {
      it.effect("PUT replaces the automation exactly, with defaults for what is left out and a new trigger id", () =>
        Effect.gen(function* () {
          const original = yield* putMe("put-me")
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
          expect(Date.parse(replaced.updated as string)).toBeGreaterThan(Date.parse(original.updated!))
          expect(replaced.created).toBe(original.created)
        }))

      it.effect("PUT without a trigger is 422 and leaves the automation as it was", () =>
        Effect.gen(function* () {
          const original = yield* putMe("put-invalid")
          const invalid = yield* request("PUT", `/automations/${original.id}`, { body: { name: "no trigger", actions: [] } })
          expect(invalid.status).toBe(422)
          expect(invalid.body.detail).toEqual([expect.objectContaining({ loc: ["body", "trigger"], type: "missing" })])
          expect((yield* readTyped(original.id)).name).toBe("put-invalid")
        }))

      it.effect("PUT of an unknown automation is 404", () =>
        Effect.gen(function* () {
          const unknown = yield* request("PUT", `/automations/${UNKNOWN_ID}`, { body: automation("x") })
          expect(unknown.status).toBe(404)
        }))

      it.effect("PATCH switches the automation off, and on again when enabled is left out", () =>
        Effect.gen(function* () {
          const original = yield* putMe("patch-me")
          expect((yield* request("PATCH", `/automations/${original.id}`, { body: { enabled: true } })).status).toBe(204)
          expect((yield* readTyped(original.id)).enabled).toBe(true)
          expect((yield* request("PATCH", `/automations/${original.id}`, { body: { enabled: false } })).status).toBe(204)
          expect((yield* readTyped(original.id)).enabled).toBe(false)
          expect((yield* request("PATCH", `/automations/${original.id}`, { body: {} })).status).toBe(204)
          expect((yield* readTyped(original.id)).enabled).toBe(true)
        }))

      it.effect("PATCH of an unknown automation is 404", () =>
        Effect.gen(function* () {
          expect((yield* request("PATCH", `/automations/${UNKNOWN_ID}`, { body: { enabled: true } })).status).toBe(404)
        }))

      it.effect("DELETE removes the automation (204), and is 404 once it is gone", () =>
        Effect.gen(function* () {
          const original = yield* putMe("delete-me")
          expect((yield* request("DELETE", `/automations/${original.id}`)).status).toBe(204)
          expect((yield* request("GET", `/automations/${original.id}`)).status).toBe(404)
          expect((yield* request("DELETE", `/automations/${original.id}`)).status).toBe(404)
        }))
    })

    describe("filter and count", () => {
      it.effect("sort by name (the default), by name descending or newest first", () =>
        Effect.gen(function* () {
          const base = yield* threeTagged("sorted")
          expect(yield* names(base)).toEqual(["sorted-a", "sorted-b", "sorted-c"])
          expect(yield* names({ ...base, sort: "NAME_DESC" })).toEqual(["sorted-c", "sorted-b", "sorted-a"])
          expect(yield* names({ ...base, sort: "CREATED_DESC", limit: 2 })).toEqual(["sorted-c", "sorted-a"])
        }))

      it.effect("page with offset and limit", () =>
        Effect.gen(function* () {
          const base = yield* threeTagged("paged")
          expect(yield* names({ ...base, offset: 1, limit: 1 })).toEqual(["paged-b"])
        }))

      it.effect("filter by tags: all of, none, any of", () =>
        Effect.gen(function* () {
          const base = yield* threeTagged("tagged")
          expect(yield* names({ automations: { ...base.automations, tags: { all_: ["x", "y"] } } })).toEqual(["tagged-a"])
          expect(yield* names({ automations: { ...base.automations, tags: { is_null_: true } } })).toEqual(["tagged-c"])
          expect(yield* names({ automations: { ...base.automations, tags: { any_: ["y", "z"] } } })).toEqual(["tagged-a"])
        }))

      it.effect("refuse a limit above 200 (422)", () =>
        Effect.gen(function* () {
          const bad = yield* request("POST", "/automations/filter", { body: { limit: 201 } })
          expect(bad.status).toBe(422)
        }))

      it.effect("count every automation", () =>
        Effect.gen(function* () {
          yield* threeTagged("counted")
          const count = ok(yield* request("POST", "/automations/count"), 200)
          expect(count).toBeGreaterThanOrEqual(4)
        }))
    })

    describe("related-to and owned-by", () => {
      it.effect("relate to the deployments they run and to the resource that owns them", () =>
        Effect.gen(function* () {
          const { deployment } = yield* deploymentWithAutomations("related")
          expect(yield* relatedNames(deployment.id)).toEqual(["owned-related", "runs-related"])
        }))

      it.effect("replacing the actions moves the relation", () =>
        Effect.gen(function* () {
          const { deployment, runs } = yield* deploymentWithAutomations("moved")
          yield* request("PUT", `/automations/${runs.id}`, { body: automation("runs-moved") })
          expect(yield* relatedNames(deployment.id)).toEqual(["owned-moved"])
        }))

      it.effect("owned-by deletes only the owned ones, answering 202 with a JSON null", () =>
        Effect.gen(function* () {
          const { deployment, runs, owned } = yield* deploymentWithAutomations("deleted")
          yield* step
          const res = yield* request("DELETE", `/automations/owned-by/prefect.deployment.${deployment.id}`)
          expect(res.status).toBe(202)
          // The reference's declared JSON body: its handler returns nothing, which is `null`.
          expect(res.headers.get("content-type")).toBe("application/json")
          expect(res.text).toBe("null")
          expect((yield* request("GET", `/automations/${owned.id}`)).status).toBe(404)
          expect((yield* request("GET", `/automations/${runs.id}`)).status).toBe(200)
        }))
    })

    describe("run-deployment job variables, checked against the deployment's work pool", () => {
      it.effect("refuse variables the pool's template refuses (422)", () =>
        Effect.gen(function* () {
          const action = yield* typedPoolAction("typed-refused")
          const bad = yield* create(action({ image: 42 }))
          expect(bad.status).toBe(422)
          expect(bad.body.detail).toMatch(/^Error creating automation: /)
        }))

      it.effect("take variables the template takes (201)", () =>
        Effect.gen(function* () {
          const action = yield* typedPoolAction("typed-taken")
          expect((yield* create(action({ image: "python" }))).status).toBe(201)
        }))

      it.effect("are 404 'Deployment not found.' for a deployment that does not exist", () =>
        Effect.gen(function* () {
          const missing = yield* create(automation("jv", { actions: [{ type: "run-deployment", deployment_id: SOME_ID, job_variables: { a: 1 } }] }))
          expect(missing.status).toBe(404)
          expect(missing.body).toEqual({ detail: "Deployment not found." })
        }))
    })

    describe("/automations/templates/validate", () => {
      it.effect("takes a valid template (204)", () =>
        Effect.gen(function* () {
          expect((yield* request("POST", "/automations/templates/validate", { body: JSON.stringify("Hello {{ flow_run.name }}") })).status).toBe(204)
        }))

      it.effect("refuses an invalid one (422) with the error's line and source", () =>
        Effect.gen(function* () {
          const bad = yield* request("POST", "/automations/templates/validate", { body: JSON.stringify("{{ oops") })
          expect(bad.status).toBe(422)
          expect(bad.body.error).toMatchObject({ line: 1, source: "{{ oops" })
        }))
    })

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
        expect(page.events.map((e) => e.event)).toEqual(["prefect.automation.created", "prefect.automation.updated", "prefect.automation.deleted"])
        expect(page.events[0].resource["prefect.resource.name"]).toBe("evented")
        expect(page.events[1].payload).toMatchObject({ id: body.id, enabled: false })
      }))
  })
})
