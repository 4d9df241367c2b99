import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeDeployment, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const create = (body: Record<string, unknown>) => request("POST", "/variables/", { body })
const names = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/variables/filter", { body }), (res) => ok(res, 200).map((v) => v.name))

const VALUES = ["string-value", '"string-value"', 123, 12.3, true, false, null, { key: "value" }, ["value1", "value2"], { key: ["value1", "value2"] }]

describe("variables", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("creates (201) with any JSON value, refuses bad names, long values and duplicates", () =>
      Effect.gen(function* () {
        const created = yield* create({ name: "my_variable", value: "my-value", tags: ["123", "456"] })
        expect(created.status).toBe(201)
        expect(created.body).toMatchObject({ name: "my_variable", value: "my-value", tags: ["123", "456"] })
        expect(created.body.id).toMatch(/^[0-9a-f-]{36}$/)
        for (const [i, value] of VALUES.entries()) {
          const res = yield* create({ name: `value-${i}`, value })
          expect(res.status, JSON.stringify(value)).toBe(201)
          expect(ok(yield* request("GET", `/variables/${res.body.id}`), 200).value).toEqual(value)
        }
        expect((yield* create({ name: "dash-name", value: 1 })).body.tags).toEqual([])
        for (const name of ["MY_VARIABLE", "my variable", "!@#$%"]) {
          const res = yield* create({ name, value: 1 })
          expect(res.status, name).toBe(422)
          expect(res.body.detail[0].msg).toContain("Variable name must only contain lowercase letters, numbers, and dashes or underscores.")
        }
        expect((yield* create({ name: "v".repeat(255), value: 1 })).status).toBe(201)
        expect((yield* create({ name: "w".repeat(256), value: 1 })).status).toBe(422)
        expect((yield* create({ name: "long-ok", value: "v".repeat(4998) })).status).toBe(201)
        const long = yield* create({ name: "long-no", value: "v".repeat(4999) })
        expect(long.status).toBe(422)
        expect(long.body.detail[0].msg).toContain("Variable value must be less than 5000 characters")
        expect((yield* create({ name: "no-value" })).body.detail[0]).toMatchObject({ loc: ["body", "value"], type: "missing" })
        const dup = yield* create({ name: "my_variable", value: 2 })
        expect(dup.status).toBe(409)
        expect(dup.body).toEqual({ detail: "A variable with the name 'my_variable' already exists." })
      })
    )

    it.effect("reads by id and by name; filters, counts and sorts", () =>
      Effect.gen(function* () {
        const one = ok(yield* create({ name: "variable1", value: 1, tags: ["tag1"] }), 201)
        yield* create({ name: "variable12", value: 2, tags: ["tag2"] })
        yield* create({ name: "variable2", value: 3, tags: ["tag1"] })
        yield* create({ name: "variable21", value: 4, tags: ["tag2"] })
        expect(ok(yield* request("GET", `/variables/${one.id}`), 200)).toEqual(one)
        expect(ok(yield* request("GET", "/variables/name/variable1"), 200)).toEqual(one)
        expect((yield* request("GET", "/variables/name/doesntexist")).body).toEqual({ detail: "Variable not found." })
        expect((yield* request("GET", `/variables/${MISSING}`)).status).toBe(404)
        const scope = { name: { any_: ["variable1", "variable12", "variable2", "variable21"] } }
        expect(yield* names({ variables: scope })).toEqual(["variable1", "variable12", "variable2", "variable21"])
        expect(yield* names({ variables: scope, sort: "NAME_DESC" })).toEqual(["variable21", "variable2", "variable12", "variable1"])
        expect(yield* names({ variables: { name: { any_: ["variable1"] } } })).toEqual(["variable1"])
        expect(yield* names({ variables: { name: { like_: "variable1%" } } })).toEqual(["variable1", "variable12"])
        expect(yield* names({ variables: { id: { any_: [one.id] } } })).toEqual(["variable1"])
        expect(yield* names({ variables: { ...scope, tags: { all_: ["tag1"] } } })).toEqual(["variable1", "variable2"])
        expect(yield* names({ variables: scope, offset: 1, limit: 2 })).toEqual(["variable12", "variable2"])
        expect((yield* request("POST", "/variables/count", { body: { variables: { ...scope, tags: { all_: ["tag1"] } } } })).body).toBe(2)
        expect((yield* request("POST", "/variables/filter", { body: { sort: "NEWEST" } })).status).toBe(422)
      })
    )

    it.effect("PATCH and DELETE by id and by name", () =>
      Effect.gen(function* () {
        const variable = ok(yield* create({ name: "patch_me", value: "before", tags: ["a"] }), 201)
        const patch = yield* request("PATCH", `/variables/${variable.id}`, {
          body: { name: "patched", value: "updated-value", tags: ["updated-tag"] }
        })
        expect(patch.status).toBe(204)
        expect(ok(yield* request("GET", `/variables/${variable.id}`), 200)).toMatchObject({
          id: variable.id,
          name: "patched",
          value: "updated-value",
          tags: ["updated-tag"]
        })
        for (const value of VALUES) {
          expect((yield* request("PATCH", "/variables/name/patched", { body: { value } })).status).toBe(204)
          expect(ok(yield* request("GET", "/variables/name/patched"), 200).value).toEqual(value)
        }
        // Null for the name or tags, or another variable's name, is a conflict.
        expect((yield* request("PATCH", `/variables/${variable.id}`, { body: { name: "patched", value: null, tags: null } })).status).toBe(409)
        yield* create({ name: "other", value: 1 })
        expect((yield* request("PATCH", "/variables/name/patched", { body: { name: "other" } })).status).toBe(409)
        expect((yield* request("PATCH", "/variables/name/patched", { body: { value: "v".repeat(5001) } })).status).toBe(422)
        expect((yield* request("PATCH", "/variables/name/patched", { body: { name: "Bad Name" } })).status).toBe(422)
        expect((yield* request("PATCH", `/variables/${MISSING}`, { body: {} })).status).toBe(404)
        expect((yield* request("PATCH", "/variables/name/doesnotexist", { body: {} })).status).toBe(404)
        expect((yield* request("DELETE", "/variables/name/patched")).status).toBe(204)
        expect((yield* request("GET", `/variables/${variable.id}`)).status).toBe(404)
        expect((yield* request("DELETE", "/variables/name/patched")).status).toBe(404)
        const other = ok(yield* request("GET", "/variables/name/other"), 200)
        expect((yield* request("DELETE", `/variables/${other.id}`)).status).toBe(204)
        expect((yield* request("DELETE", `/variables/${other.id}`)).status).toBe(404)
      })
    )

    it.effect("deployment parameters and run input take workspace variables", () =>
      Effect.gen(function* () {
        yield* create({ name: "my_setting", value: { retries: 3, regions: ["eu", "us"] } })
        const flowId = yield* makeFlow("uses-variables")
        const dep = yield* makeDeployment({ name: "v", flow_id: flowId, enforce_parameter_schema: false })
        const ref = { __prefect_kind: "workspace_variable", variable_name: "my_setting" }
        const run = ok(yield* request("POST", `/deployments/${dep.id}/create_flow_run`, { body: { parameters: { config: ref } } }))
        expect(run.parameters).toEqual({ config: { retries: 3, regions: ["eu", "us"] } })
        const missing = yield* request("POST", `/deployments/${dep.id}/create_flow_run`, {
          body: { parameters: { config: { __prefect_kind: "workspace_variable", variable_name: "nope" } } }
        })
        expect(missing.status).toBe(400)
        expect(missing.body).toEqual({ detail: "Error hydrating flow run parameters: Variable 'nope' not found in workspace." })
        expect((yield* request("PATCH", `/deployments/${dep.id}`, { body: { parameters: { config: ref } } })).status).toBe(204)
        expect(ok(yield* request("GET", `/deployments/${dep.id}`), 200).parameters).toEqual({ config: { retries: 3, regions: ["eu", "us"] } })
        const bulk = ok(yield* request("POST", `/deployments/${dep.id}/create_flow_run/bulk`, {
          body: [{ parameters: { x: { __prefect_kind: "workspace_variable", variable_name: "nope" } } }]
        }), 200)
        expect(bulk.results[0]).toEqual({ flow_run_id: null, status: "FAILED", error: "Variable 'nope' not found in workspace." })
      })
    )
  })
})
