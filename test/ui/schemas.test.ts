import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const URL = "/ui/schemas/validate"

const parameters = (properties: Record<string, unknown>, required: ReadonlyArray<string> = [], extra: Record<string, unknown> = {}) => ({
  title: "Parameters",
  type: "object",
  properties,
  required,
  ...extra
})

const validate = (schema: unknown, values: unknown) => request("POST", URL, { body: { schema, values } })

describe("/ui/schemas/validate", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("accepts an empty schema and values", () =>
      Effect.gen(function* () {
        const res = yield* validate({}, {})
        expect(res.status).toBe(200)
        expect(res.body).toEqual({ errors: [], valid: true })
      })
    )

    it.effect("refuses a schema that is not a valid JSON Schema (422, the first problem)", () =>
      Effect.gen(function* () {
        const res = yield* validate(
          { title: "Parameters", type: "NOT A REAL OBJECT RAWR", properties: { param: { title: "param", position: 0, type: "integer" } }, required: ["param"] },
          { param: 1 }
        )
        expect(res.status).toBe(422)
        expect(res.body.detail).toBe("Invalid schema: 'NOT A REAL OBJECT RAWR' is not valid under any of the given schemas")
      })
    )

    it.effect("answers valid values: no errors", () =>
      Effect.gen(function* () {
        const res = yield* validate(parameters({ param: { title: "param", position: 0, type: "integer" } }, ["param"]), { param: 1 })
        expect(res.status).toBe(200)
        expect(res.body).toEqual({ errors: [], valid: true })
      })
    )

    it.effect("answers a property's problems under its name", () =>
      Effect.gen(function* () {
        const res = yield* validate(parameters({ param: { title: "param", position: 0, type: "integer" } }, ["param"]), {
          param: "not an int"
        })
        expect(res.status).toBe(200)
        expect(res.body).toEqual({ errors: [{ property: "param", errors: ["'not an int' is not of type 'integer'"] }], valid: false })
      })
    )

    it.effect("refuses a schema with circular references (422)", () =>
      Effect.gen(function* () {
        const res = yield* validate(
          {
            ...parameters({ param: { title: "param", position: 0, allOf: [{ $ref: "#/definitions/City" }] } }, ["param"]),
            definitions: {
              City: {
                title: "City",
                properties: { population: { title: "Population", type: "integer" }, name: { title: "Name", type: "string" } },
                required: ["population", "name"],
                // City refers to itself.
                allOf: [{ $ref: "#/definitions/City" }]
              }
            }
          },
          { param: "maybe a city, but we'll never know" }
        )
        expect(res.status).toBe(422)
        expect(res.body.detail).toBe("Invalid schema: Unable to validate schema with circular references.")
      })
    )

    it.effect("never fetches a remote $ref: the values cannot be checked (422)", () =>
      Effect.gen(function* () {
        for (const ref of ["https://a.example.com/schema.json", "http://b.example.com.namespace.svc/schema.json", "http://169.254.169.254/latest/meta-data/"]) {
          const res = yield* validate(parameters({ param: { $ref: ref } }), { param: 1 })
          expect(res.status).toBe(422)
          expect(res.body.detail).toBe(`Invalid schema: Validation failed. Failure reason: Unresolvable: ${ref}`)
        }
        // As in the reference, only a reference the values reach is looked up.
        const unreached = yield* validate(parameters({ param: { $ref: "https://a.example.com/schema.json" } }), {})
        expect(unreached.body).toEqual({ errors: [], valid: true })
        const nowhere = yield* validate(parameters({ param: { $ref: "#/definitions/Nope" } }), { param: 1 })
        expect(nowhere.status).toBe(422)
        expect(nowhere.body.detail).toMatch(/^Invalid schema: Validation failed\. Failure reason: '\/definitions\/Nope' does not exist within \{'title': 'Parameters'/)
      })
    )

    it.effect("nests problems by property and list index, required ones under the missing property, in the schema's order", () =>
      Effect.gen(function* () {
        const schema = parameters(
          {
            a: { type: "integer" },
            b: { type: "array", items: { type: "object", properties: { x: { type: "string" } }, required: ["x", "y"] } },
            c: { type: "string", enum: ["p", "q"] },
            d: { type: "object", additionalProperties: false, properties: { k: {} } },
            e: { type: "integer", minimum: 3 }
          },
          ["a", "z"]
        )
        const res = yield* validate(schema, { e: 1, a: "x", b: [{ x: 1 }, { x: "ok", y: 1 }, 5], c: "r", d: { z: 1, y: 2 } })
        expect(res.status).toBe(200)
        expect(res.body).toEqual({
          errors: [
            { property: "a", errors: ["'x' is not of type 'integer'"] },
            {
              property: "b",
              errors: [
                { index: 0, errors: [{ property: "x", errors: ["1 is not of type 'string'"] }, { property: "y", errors: ["'y' is a required property"] }] },
                { index: 2, errors: ["5 is not of type 'object'"] }
              ]
            },
            { property: "c", errors: ["'r' is not one of ['p', 'q']"] },
            { property: "d", errors: ["Additional properties are not allowed ('y', 'z' were unexpected)"] },
            { property: "e", errors: ["1 is less than the minimum of 3"] },
            { property: "z", errors: ["'z' is a required property"] }
          ],
          valid: false
        })
      })
    )

    it.effect("prepares the schema as the reference does: optional properties without a default may be null, tuples", () =>
      Effect.gen(function* () {
        const schema = parameters({ opt: { type: "integer" }, req: { type: "integer" }, pair: { type: "array", items: [{ type: "integer" }, { type: "string" }] } }, ["req"])
        expect((yield* validate(schema, { opt: null, req: 1, pair: [1, "a"] })).body).toEqual({ errors: [], valid: true })
        const res = yield* validate(schema, { opt: "x", req: null, pair: [1, 2] })
        expect(res.body).toEqual({
          errors: [
            { property: "opt", errors: ["'x' is not valid under any of the given schemas"] },
            { property: "req", errors: ["None is not of type 'integer'"] },
            { property: "pair", errors: [{ index: 1, errors: ["2 is not of type 'string'"] }] }
          ],
          valid: false
        })
        // Values at the root: problems at the root are plain messages.
        expect((yield* validate({ type: "object", minProperties: 2 }, { a: 1 })).body).toEqual({
          errors: ["{'a': 1} does not have enough properties"],
          valid: false
        })
      })
    )

    it.effect("accepts a block document by reference where a block is expected", () =>
      Effect.gen(function* () {
        const schema = parameters({ creds: { allOf: [{ $ref: "#/definitions/Creds" }] } }, ["creds"], {
          definitions: {
            Creds: { title: "Creds", block_type_slug: "creds", type: "object", properties: { token: { type: "string" } }, required: ["token"] }
          }
        })
        expect((yield* validate(schema, { creds: { token: "t" } })).body.valid).toBe(true)
        expect((yield* validate(schema, { creds: { $ref: "00000000-0000-4000-8000-000000000000" } })).body.valid).toBe(true)
        expect((yield* validate(schema, { creds: 5 })).body).toEqual({
          errors: [{ property: "creds", errors: ["5 is not valid under any of the given schemas"] }],
          valid: false
        })
      })
    )

    it.effect("fills in workspace variables; a missing variable, bad JSON or a bad template is the value's problem", () =>
      Effect.gen(function* () {
        ok(yield* request("POST", "/variables/", { body: { name: "answer", value: 42 } }), 201)
        const schema = parameters({ n: { type: "integer" }, s: { type: "string" }, j: { type: "integer" }, t: { type: "string" }, u: { type: "integer" } })
        const variable = (name: string) => ({ __prefect_kind: "workspace_variable", variable_name: name })
        expect((yield* validate(schema, { n: variable("answer") })).body).toEqual({ errors: [], valid: true })
        expect((yield* validate(schema, { s: variable("answer") })).body).toEqual({
          errors: [{ property: "s", errors: ["42 is not valid under any of the given schemas"] }],
          valid: false
        })
        // A template is not rendered: its value is not known, so not checked; a bad one is reported.
        const res = yield* validate(schema, {
          s: variable("missing"),
          j: { __prefect_kind: "json", value: "{bad" },
          t: { __prefect_kind: "jinja", template: "{{ flow_run.name }}" },
          u: { __prefect_kind: "jinja", template: "{{ oops" }
        })
        expect(res.status).toBe(200)
        expect(res.body.valid).toBe(false)
        expect(res.body.errors).toEqual([
          { property: "s", errors: ["Variable 'missing' not found in workspace."] },
          { property: "j", errors: [expect.stringMatching(/^Invalid JSON: /)] },
          { property: "u", errors: [expect.stringMatching(/^Invalid jinja: /)] }
        ])
        // A json value without `value` is dropped.
        expect((yield* validate(parameters({ n: { type: "integer" } }, ["n"]), { n: { __prefect_kind: "json" } })).body).toEqual({
          errors: [{ property: "n", errors: ["'n' is a required property"] }],
          valid: false
        })
      })
    )

    it.effect("refuses a body without an object schema or values (422)", () =>
      Effect.gen(function* () {
        const missing = yield* request("POST", URL, { body: { schema: {} } })
        expect(missing.status).toBe(422)
        expect(missing.body.detail).toEqual([expect.objectContaining({ loc: ["body", "values"], type: "missing" })])
        const notObject = yield* validate([], {})
        expect(notObject.status).toBe(422)
        expect(notObject.body.detail).toEqual([expect.objectContaining({ loc: ["body", "schema"], type: "dict_type" })])
      })
    )
  })
})
