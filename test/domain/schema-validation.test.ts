import { describe, expect, it } from "@effect/vitest"
import { hydrateKeepingProblems } from "../../src/domain/parameters.ts"
import { checkValues, prepareSchema, schemaProblem } from "../../src/domain/schema-validation.ts"

/** What POST /ui/schemas/validate answers: the 422 detail, or the problems. */
const check = (schema: Record<string, unknown>, values: Record<string, unknown>, variables: Record<string, unknown> = {}) => {
  const prepared = prepareSchema(schema)
  const problem = schemaProblem(prepared)
  if (problem !== undefined) return problem
  const checked = checkValues(prepared, hydrateKeepingProblems(values, { variable: (name) => variables[name] }))
  return checked._tag === "InvalidSchema" ? checked.detail : checked.errors
}

describe("checking values against a schema as the reference's UI does", () => {
  it("reports problems in the order of the schema's keywords", () => {
    const properties = { c: { type: "integer" } }
    expect(check({ required: ["a", "b"], properties }, { c: "x" })).toEqual([
      { property: "a", errors: ["'a' is a required property"] },
      { property: "b", errors: ["'b' is a required property"] },
      { property: "c", errors: ["'x' is not valid under any of the given schemas"] }
    ])
    expect(check({ properties, required: ["a", "b"] }, { c: "x" })).toEqual([
      { property: "c", errors: ["'x' is not valid under any of the given schemas"] },
      { property: "a", errors: ["'a' is a required property"] },
      { property: "b", errors: ["'b' is a required property"] }
    ])
  })

  it("words keywords as python-jsonschema does, formats included", () => {
    const properties = {
      v: { oneOf: [{ type: "integer" }, { type: "number" }] },
      n: { not: { type: "string" } },
      f: { type: "string", format: "uuid" },
      d: { type: "string", format: "date-time" },
      e: { format: "date" },
      l: { type: "array", minItems: 1 },
      u: { type: "array", items: { type: "integer" }, uniqueItems: true }
    }
    expect(check({ properties }, { v: 1, n: "s", f: "nope", d: "2024-13-01T00:00:00Z", e: "2024-02-30", l: [], u: [1, 1, "x"] })).toEqual([
      { property: "v", errors: ["1 is valid under each of {'type': 'integer'}, {'type': 'number'}"] },
      { property: "n", errors: ["'s' should not be valid under {'type': 'string'}"] },
      { property: "f", errors: ["'nope' is not a 'uuid'"] },
      { property: "d", errors: ["'2024-13-01T00:00:00Z' is not a 'date-time'"] },
      { property: "e", errors: ["'2024-02-30' is not a 'date'"] },
      { property: "l", errors: ["[] should be non-empty"] },
      // Each problem has its own entry: the item's, then the list's.
      { property: "u", errors: [{ index: 2, errors: ["'x' is not of type 'integer'"] }] },
      { property: "u", errors: ["[1, 1, 'x'] has non-unique elements"] }
    ])
    expect(check({ properties }, { d: "2024-02-29T23:59:59.5+01:00", f: "00000000-0000-4000-8000-000000000000" })).toEqual([])
    expect(check({ type: "object", patternProperties: { "^x": {} }, additionalProperties: false }, { a: 1, xb: 2 })).toEqual([
      "'a' does not match any of the regexes: '^x'"
    ])
  })

  it("leaves out the failing branches of anyOf, however deep, and keeps the keyword's own problem", () => {
    const schema = {
      properties: { a: { anyOf: [{ $ref: "#/definitions/A" }, { type: "null" }] } },
      definitions: { A: { type: "object", properties: { q: { type: "integer" } }, required: ["q"] } }
    }
    expect(check(schema, { a: { q: "s" } })).toEqual([{ property: "a", errors: ["{'q': 's'} is not valid under any of the given schemas"] }])
    expect(check(schema, { a: { q: 1 } })).toEqual([])
  })

  it("reports a placeholder's problem wherever a schema applies to it, instead of the others there", () => {
    const missing = { __prefect_kind: "workspace_variable", variable_name: "nope" }
    // Three schemas apply to `a`: its own, allOf's, and the one it refers to.
    const schema = { properties: { a: { allOf: [{ $ref: "#/definitions/A" }] } }, definitions: { A: { type: "string" } } }
    const problem = { property: "a", errors: ["Variable 'nope' not found in workspace."] }
    expect(check(schema, { a: missing })).toEqual([problem, problem, problem])
    // No schema applies to `b`: nothing to report.
    expect(check(schema, { b: missing })).toEqual([])
    expect(check({ type: "object" }, missing)).toEqual(["Variable 'nope' not found in workspace."])
    expect(check(schema, { a: { __prefect_kind: "workspace_variable", variable_name: "v" } }, { v: "text" })).toEqual([])
  })

  it("names a missing property by the first word of its message, as the reference does", () => {
    expect(check({ type: "object", properties: { "my param": { type: "integer" } }, required: ["my param"] }, {})).toEqual([
      { property: "my", errors: ["'my param' is a required property"] }
    ])
  })

  it("refuses a pattern that is not a regular expression, and validates whatever $schema says", () => {
    expect(check({ properties: { a: { type: "string", pattern: "(" } } }, {})).toBe("Invalid schema: '(' is not a 'regex'")
    const draft7 = { $schema: "http://json-schema.org/draft-07/schema#", $id: "https://example.com/p", properties: { a: { type: "integer" } } }
    expect(check(draft7, { a: "s" })).toEqual([{ property: "a", errors: ["'s' is not valid under any of the given schemas"] }])
    // Another schema with the same $id.
    expect(check({ $id: "https://example.com/p", properties: { a: { type: "string" } }, required: ["a"] }, { a: 1 })).toEqual([
      { property: "a", errors: ["1 is not of type 'string'"] }
    ])
  })
})
