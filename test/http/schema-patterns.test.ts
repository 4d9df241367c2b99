/**
 * JSON Schema `pattern` and `patternProperties` in schemas users store or send: `^(a+)+$` against
 * 30 a's and a '!' took a backtracking engine minutes, with the process blocked. Here every site
 * that validates against such a schema answers in milliseconds, correctly, and /health answers
 * afterwards; a pattern RE2 cannot run is a 422 naming it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { makeDeployment, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"
import { stillServing, within } from "../support/timing.ts"

const EVIL = "^(a+)+$"
const HOSTILE = `${"a".repeat(30)}!`
const LOOKAHEAD = "^(?=a)a+$"

/**
 * Requests are checked to answer within 3 s: a backtracking engine takes minutes (110 s for one of
 * these); the margin is for a machine busy with other test files.
 */
const fast = within(3000)

const parameterSchema = (name: Record<string, unknown>) => ({
  type: "object",
  properties: { name },
  patternProperties: { [EVIL]: { type: "integer" } }
})

describe("hostile JSON Schema patterns", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("a deployment's parameter schema: create_flow_run answers at once, 409 for a mismatch, 422 for a pattern RE2 cannot run", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("patterns")
        const dep = yield* makeDeployment({ name: "evil", flow_id: flowId, parameter_openapi_schema: parameterSchema({ type: "string", pattern: EVIL }) })
        const run = (body: Record<string, unknown>) => fast(request("POST", `/deployments/${dep.id}/create_flow_run`, { body }))

        const mismatch = yield* run({ parameters: { name: HOSTILE } })
        expect(mismatch.status).toBe(409)
        expect(mismatch.body).toEqual({
          detail: `Error creating flow run: Validation failed for field 'name'. Failure reason: '${HOSTILE}' does not match '${EVIL}'`
        })
        expect((yield* run({ parameters: { name: "a".repeat(30) } })).status).toBe(201)
        // patternProperties: a name the pattern nearly matches is let through; one it matches is checked.
        expect((yield* run({ parameters: { [HOSTILE]: "x" } })).status).toBe(201)
        const matched = yield* run({ parameters: { ["a".repeat(30)]: "x" } })
        expect(matched.status).toBe(409)
        expect(matched.body.detail).toBe(`Error creating flow run: Validation failed for field '${"a".repeat(30)}'. Failure reason: 'x' is not of type 'integer'`)
        yield* stillServing

        // A pattern the reference (Python) would run but RE2 cannot: stored, refused where it is used.
        const lookahead = yield* makeDeployment({ name: "lookahead", flow_id: flowId, parameter_openapi_schema: parameterSchema({ type: "string", pattern: LOOKAHEAD }) })
        const refused = yield* fast(request("POST", `/deployments/${lookahead.id}/create_flow_run`, { body: { parameters: { name: "aaa" } } }))
        expect(refused.status).toBe(422)
        expect(refused.body.detail).toMatch(/^Invalid schema: the pattern "\^\(\?=a\)a\+\$" cannot be used \(.+\); patterns are matched with RE2, which has no lookahead, lookbehind or backreferences$/)
        const bulk = yield* fast(request("POST", `/deployments/${lookahead.id}/create_flow_run/bulk`, { body: [{ parameters: { name: "aaa" } }] }))
        expect(ok(bulk, 200).results[0]).toMatchObject({ flow_run_id: null, status: "FAILED", error: expect.stringMatching(/^Invalid schema: the pattern/) })
        // Without enforcement the run is created.
        expect((yield* fast(request("POST", `/deployments/${lookahead.id}/create_flow_run`, { body: { parameters: { name: "aaa" }, enforce_parameter_schema: false } }))).status).toBe(201)
        const enforced = yield* fast(
          request("POST", "/deployments/", {
            body: { name: "enforced", flow_id: flowId, enforce_parameter_schema: true, parameters: { name: "aaa" }, parameter_openapi_schema: parameterSchema({ type: "string", pattern: LOOKAHEAD }) }
          })
        )
        expect(enforced.status).toBe(422)
        expect(enforced.body.detail[0].msg).toMatch(/^Value error, Invalid schema: the pattern/)
        const update = yield* fast(request("PATCH", `/deployments/${lookahead.id}`, { body: { parameters: { name: "aaa" } } }))
        expect(update.status).toBe(422)
        expect(update.body.detail).toMatch(/^Invalid schema: the pattern/)
        yield* stillServing
      }))

    it.effect("/ui/schemas/validate answers at once, every problem found; a pattern RE2 cannot run is a 422", () =>
      Effect.gen(function* () {
        const schema = {
          type: "object",
          properties: { name: { type: "string", pattern: EVIL }, list: { type: "array", items: { type: "string", pattern: EVIL } } },
          patternProperties: { [EVIL]: { type: "integer" } },
          additionalProperties: false
        }
        const validate = (schema: unknown, values: unknown) => fast(request("POST", "/ui/schemas/validate", { body: { schema, values } }))
        const res = yield* validate(schema, { name: HOSTILE, list: [HOSTILE, "aa"], [HOSTILE]: 1, ["a".repeat(30)]: "x" })
        expect(res.status).toBe(200)
        expect(res.body.valid).toBe(false)
        expect(res.body.errors).toEqual(
          expect.arrayContaining([
            { property: "name", errors: [`'${HOSTILE}' does not match '${EVIL}'`] },
            { property: "list", errors: [{ index: 0, errors: [`'${HOSTILE}' does not match '${EVIL}'`] }] },
            { property: "a".repeat(30), errors: ["'x' is not of type 'integer'"] }
          ])
        )
        // As python-jsonschema words an extra property beside patternProperties.
        expect(res.body.errors).toContain(`'${HOSTILE}' does not match any of the regexes: '${EVIL}'`)
        expect((yield* validate(schema, { name: "aaa" })).body).toEqual({ errors: [], valid: true })

        for (const bad of [{ type: "string", pattern: LOOKAHEAD }, { type: "object", patternProperties: { "(a)\\1": {} } }]) {
          const refused = yield* validate(bad, {})
          expect(refused.status).toBe(422)
          expect(refused.body.detail).toMatch(/^Invalid schema: the pattern ".+" cannot be used/)
        }
        const long = yield* validate({ type: "string", pattern: "a".repeat(2001) }, {})
        expect(long.status).toBe(422)
        expect(long.body.detail).toMatch(/^Invalid schema: the pattern "a+…" is longer than 2000 characters$/)
        yield* stillServing
      }))

    it.effect("a work pool's job template: its defaults, a deployment's job variables and a run's are checked at once", () =>
      Effect.gen(function* () {
        const template = (image: Record<string, unknown>) => ({
          job_configuration: { image: "{{ image }}" },
          variables: { type: "object", properties: { image: { type: "string", ...image } } }
        })
        const pool = (name: string, image: Record<string, unknown>) =>
          fast(request("POST", "/work_pools/", { body: { name, type: "docker", base_job_template: template(image) } }))

        const badDefault = yield* pool("evil-default", { pattern: EVIL, default: HOSTILE })
        expect(badDefault.status).toBe(422)
        expect(badDefault.body.detail).toBe(
          `Validation failed for work pool's job variable defaults: Validation failed for field 'image'. Failure reason: '${HOSTILE}' does not match '${EVIL}'`
        )
        const lookahead = yield* pool("lookahead-pool", { pattern: LOOKAHEAD, default: "aaa" })
        expect(lookahead.status).toBe(422)
        expect(lookahead.body.detail).toMatch(/^Invalid schema: the pattern "\^\(\?=a\)a\+\$" cannot be used/)
        expect(ok(yield* pool("evil-pool", { pattern: EVIL }), 201).name).toBe("evil-pool")

        const flowId = yield* makeFlow("pooled-patterns")
        const deployment = (job_variables: Record<string, unknown>) =>
          fast(request("POST", "/deployments/", { body: { name: "pooled", flow_id: flowId, work_pool_name: "evil-pool", job_variables } }))
        const refused = yield* deployment({ image: HOSTILE })
        expect(refused.status).toBe(422)
        expect(refused.body.detail).toBe(`Error creating deployment: Validation failed for field 'image'. Failure reason: '${HOSTILE}' does not match '${EVIL}'`)
        const dep = ok(yield* deployment({ image: "aaa" }), 201)
        const run = yield* fast(request("POST", `/deployments/${dep.id}/create_flow_run`, { body: { job_variables: { image: HOSTILE } } }))
        expect(run.status).toBe(422)
        expect(run.body.detail).toBe(`Error creating flow run: Validation failed for field 'image'. Failure reason: '${HOSTILE}' does not match '${EVIL}'`)
        expect((yield* fast(request("POST", `/deployments/${dep.id}/create_flow_run`, { body: { job_variables: { image: "a".repeat(30) } } }))).status).toBe(201)
        yield* stillServing
      }))

    it.effect("a paused run's input schema: resuming answers at once", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("paused-patterns")
        const created = ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } }), 201)
        yield* TestClock.adjust("1 second")
        ok(yield* request("POST", `/flow_runs/${created.id}/set_state`, { body: { state: { type: "RUNNING" } } }), 201)
        yield* TestClock.adjust("1 second")
        const schema = { type: "object", properties: { answer: { type: "string", pattern: EVIL } } }
        ok(yield* request("POST", `/flow_runs/${created.id}/input`, { body: { key: "schema", value: JSON.stringify(schema) } }), 201)
        ok(
          yield* request("POST", `/flow_runs/${created.id}/set_state`, {
            body: { state: { type: "PAUSED", state_details: { run_input_keyset: { schema: "schema", response: "response", description: "d" } } } }
          }),
          201
        )
        const rejected = yield* fast(request("POST", `/flow_runs/${created.id}/resume`, { body: { run_input: { answer: HOSTILE } } }))
        expect(rejected.body).toMatchObject({
          status: "REJECT",
          details: { reason: `Reason: Validation failed for field 'answer'. Failure reason: '${HOSTILE}' does not match '${EVIL}'` }
        })
        const resumed = yield* fast(request("POST", `/flow_runs/${created.id}/resume`, { body: { run_input: { answer: "aaa" } } }))
        expect(resumed.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING" } })
        yield* stillServing
      }))
  })
})
