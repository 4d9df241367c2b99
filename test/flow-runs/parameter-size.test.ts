import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { makeDeployment, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "0b6f3a52-1c7e-4d35-9a4e-6f1d2c3b4a59"

/** {"key":"a…a"} with 100 a's: 110 bytes as the reference serialises it. */
const large = { key: "a".repeat(100) }
const small = { key: "a" }

/** The reference's 422 for `parameters` over server.api.max_parameter_size (50 here), its validator's value_error. */
const tooLarge = (bytes: number, parameters: unknown = large) => ({
  detail: [
    {
      loc: ["body", "parameters"],
      msg: `Value error, Flow run parameters must be less than 50 bytes when serialized (got ${bytes} bytes).`,
      type: "value_error",
      input: parameters,
      ctx: { error: {} }
    }
  ]
})

// `layer`, not `it.layer`: @effect/vitest's it.layer nests every later it.layer of the file inside
// the first one (its server and settings included).
describe("server.api.max_parameter_size", () => {
  layer(testServer({ overrides: { "server.api.max_parameter_size": 50 } }), { timeout: 60_000 })((it) => {
    it.effect("refuses larger parameters of a flow run with 422, on create and update, before anything else is looked at", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("sized")
        const refused = yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, parameters: large } })
        expect(refused.status).toBe(422)
        expect(refused.body).toEqual(tooLarge(110))
        // Even for a flow that does not exist: the body is refused first, as the reference validates it.
        expect((yield* request("POST", "/flow_runs/", { body: { flow_id: MISSING, parameters: large } })).body).toEqual(tooLarge(110))
        const run = ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, parameters: small } }), 201)
        const update = yield* request("PATCH", `/flow_runs/${run.id}`, { body: { parameters: large } })
        expect(update.status).toBe(422)
        expect(update.body).toEqual(tooLarge(110))
        expect((yield* request("PATCH", `/flow_runs/${MISSING}`, { body: { parameters: large } })).status).toBe(422)
        expect((yield* request("GET", `/flow_runs/${run.id}`)).body.parameters).toEqual(small)
        expect((yield* request("PATCH", `/flow_runs/${run.id}`, { body: { parameters: { key: "b" } } })).status).toBe(204)
        // Counted as the reference counts: non-ASCII characters escaped (\u00e9, 6 bytes each).
        const accented = yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, parameters: { k: "é".repeat(10) } } })
        expect(accented.body).toEqual(tooLarge(68, { k: "é".repeat(10) }))
      })
    )

    it.effect("refuses larger parameters of a deployment (create, update) and of a run from it", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("sized-deployment")
        const create = yield* request("POST", "/deployments/", { body: { name: "d", flow_id: flowId, parameters: large } })
        expect(create.status).toBe(422)
        expect(create.body).toEqual(tooLarge(110))
        const deployment = yield* makeDeployment({ name: "d", flow_id: flowId, parameters: small })
        const update = yield* request("PATCH", `/deployments/${deployment.id}`, { body: { parameters: large } })
        expect(update.status).toBe(422)
        expect(update.body).toEqual(tooLarge(110))
        expect((yield* request("PATCH", `/deployments/${MISSING}`, { body: { parameters: large } })).body).toEqual(tooLarge(110))
        const run = yield* request("POST", `/deployments/${deployment.id}/create_flow_run`, { body: { parameters: large } })
        expect(run.status).toBe(422)
        expect(run.body).toEqual(tooLarge(110))
        expect((yield* request("POST", `/deployments/${deployment.id}/create_flow_run`, { body: { parameters: small } })).status).toBe(201)
      })
    )
  })
})

describe("server.api.max_parameter_size 0", () => {
  layer(testServer({ overrides: { "server.api.max_parameter_size": 0 } }), { timeout: 60_000 })((it) => {
    it.effect("turns the limit off", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("unbounded")
        const res = yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, parameters: { data: "x".repeat(600_000) } } })
        expect(res.status).toBe(201)
      })
    )
  })
})
