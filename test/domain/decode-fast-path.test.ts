/**
 * The decode fast path (src/domain/decode-fast-path.ts) answers as the schema does: on every schema
 * the Api decodes (each endpoint's body, path and query parameters) and every schema its answers are
 * made of (decoded as rows are), for values made from the schema (valid ones) and values made wrong
 * (a field removed, changed, added), a value from the fast path is the schema's value, field for
 * field and in the same order, and what it refuses the schema refuses.
 */
import { HttpApi } from "@effect/platform"
import { isDeepStrictEqual } from "node:util"
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Either, FastCheck as fc, Schema, SchemaAST as AST } from "effect"
import { BatonApi } from "../../src/api.ts"
import { compareDecodes, decodeFastPathInstalled, installDecodeFastPath } from "../../src/domain/decode-fast-path.ts"
import { SetFlowRunStateBody } from "../../src/flow-runs/schemas.ts"
import { StateCreate } from "../../src/domain/states.ts"

installDecodeFastPath()

/** Every schema the Api decodes or answers with, by where it is used. */
const schemas = new Map<string, Schema.Schema.Any>()
HttpApi.reflect(BatonApi, {
  onGroup: () => {},
  onEndpoint: ({ endpoint, group, payloads, successes }) => {
    const name = `${group.identifier}.${endpoint.name}`
    const add = (where: string, ast: AST.AST | undefined) => {
      if (ast !== undefined) schemas.set(`${name} ${where}`, Schema.make(ast))
    }
    for (const [contentType, payload] of payloads) add(`payload ${contentType}`, payload.ast)
    add("path", endpoint.pathSchema._tag === "Some" ? endpoint.pathSchema.value.ast : undefined)
    add("query", endpoint.urlParamsSchema._tag === "Some" ? endpoint.urlParamsSchema.value.ast : undefined)
    add("headers", endpoint.headersSchema._tag === "Some" ? endpoint.headersSchema.value.ast : undefined)
    for (const [status, success] of successes) {
      if (success.ast._tag === "Some") add(`success ${status}`, success.ast.value)
    }
  }
})

/** The keys of every object in `value`, in order, nested: the same value in another order differs. */
const shape = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(shape)
  if (value instanceof Date || value === null || typeof value !== "object") return typeof value
  return Object.entries(value).map(([key, inner]) => [key, shape(inner)])
}

/** Values made wrong from a valid one: a field removed, replaced by anything, one added. */
const spoiled = (valid: unknown) =>
  fc.tuple(fc.nat(), fc.anything(), fc.string()).map(([at, anything, key]) => {
    if (valid === null || typeof valid !== "object" || Array.isArray(valid)) return anything
    const copy: Record<string, unknown> = { ...(valid as Record<string, unknown>) }
    const keys = Object.keys(copy)
    if (keys.length === 0) return { [key]: anything }
    const chosen = keys[at % keys.length]!
    if (at % 3 === 0) delete copy[chosen]
    else if (at % 3 === 1) copy[chosen] = anything
    else copy[key] = anything
    return copy
  })

/** Checks one input; how the fast path answered. */
const agrees = (label: string, schema: Schema.Schema.Any, input: unknown, options?: AST.ParseOptions) => {
  const { fast, schema: own } = compareDecodes(schema, input, options)
  if (own === undefined) return "schema-effect"
  if (fast === "refused") expect(Either.isLeft(own), `${label}: refused ${JSON.stringify(input)}`).toBe(true)
  if (typeof fast === "object") {
    expect(Either.isRight(own), `${label}: accepted ${JSON.stringify(input)}`).toBe(true)
    const value = Either.getOrThrow(own)
    expect(shape(fast.value), label).toEqual(shape(value))
    // A default made afresh each time (a new id) differs between two decodes by the schema too.
    const again = compareDecodes(schema, input, options).schema
    const deterministic = again !== undefined && Either.isRight(again) && isDeepStrictEqual(again.right, value)
    if (deterministic) expect(fast.value, label).toStrictEqual(value)
  }
  return typeof fast === "object" ? "value" : fast
}

describe("decode fast path", () => {
  it("is installed", () => {
    expect(installDecodeFastPath()).toBe(true)
    expect(decodeFastPathInstalled()).toBe(true)
  })

  it("covers the Api's schemas", () => {
    expect(schemas.size).toBeGreaterThan(300)
  })

  it("answers as each schema of the Api does, for valid values and spoiled ones", { timeout: 120_000 }, () => {
    const tally = { value: 0, refused: 0, unsure: 0, "schema-effect": 0 }
    let checked = 0
    for (const [label, schema] of schemas) {
      let valid: fc.Arbitrary<unknown>
      try {
        valid = Arbitrary.make(Schema.encodedSchema(schema) as Schema.Schema<unknown>)
      } catch {
        continue
      }
      checked++
      fc.assert(
        fc.property(valid.chain((value) => fc.tuple(fc.constant(value), spoiled(value))), ([value, wrong]) => {
          // Through JSON, as a body or a row arrives.
          const sent = JSON.parse(JSON.stringify(value ?? null)) as unknown
          tally[agrees(label, schema, sent)]++
          tally[agrees(label, schema, wrong)]++
        }),
        { numRuns: Number(process.env.RUNS ?? 12), seed: Number(process.env.SEED ?? 42) }
      )
    }
    expect(checked).toBeGreaterThan(250)
    // The fast path answers most of them itself.
    expect(tally.value).toBeGreaterThan(tally.unsure)
    expect(tally.refused).toBeGreaterThan(0)
  })

  it("gives a state change's body as the schema does, defaults and all, and refuses an unknown state type", () => {
    const valid = { state: { type: "PENDING" }, force: true }
    expect(agrees("set_state", SetFlowRunStateBody, valid)).toBe("value")
    const decoded = Schema.decodeUnknownSync(SetFlowRunStateBody)(valid)
    expect(decoded.state.state_details.flow_run_id).toBeNull()
    expect(decoded.state.data).toBeNull()
    expect(agrees("set_state", SetFlowRunStateBody, { state: { type: "PENDINGX" } })).toBe("refused")
  })

  it("refuses an unexpected field where the schema's options do, and takes the caller's options", () => {
    // StateCreate refuses fields it does not know (its parse options).
    expect(agrees("StateCreate", StateCreate, { type: "RUNNING", colour: "red" })).toBe("refused")
    const Loose = Schema.Struct({ a: Schema.String })
    expect(agrees("loose", Loose, { a: "x", b: 1 })).toBe("value")
    expect(agrees("strict", Loose, { a: "x", b: 1 }, { onExcessProperty: "error" })).toBe("refused")
    // Kept fields and their original order are left to the schema.
    expect(agrees("preserve", Loose, { a: "x", b: 1 }, { onExcessProperty: "preserve" })).toBe("unsure")
    expect(Schema.decodeUnknownSync(Loose)({ a: "x", b: 1 }, { onExcessProperty: "preserve" })).toEqual({ a: "x", b: 1 })
  })

  it("leaves a union to the schema when more than one member makes a value", () => {
    const Both = Schema.Union(Schema.NumberFromString, Schema.String)
    expect(agrees("both", Both, "1")).toBe("unsure")
    expect(Schema.decodeUnknownSync(Both)("1")).toBe(1)
    expect(agrees("both", Both, "x")).toBe("value")
    const Literals = Schema.Union(Schema.Literal("a"), Schema.String, Schema.Null)
    expect(agrees("literals", Literals, "a")).toBe("value")
    expect(agrees("literals", Literals, 1)).toBe("refused")
  })

  it("decodes through the fast path in a server's request", () =>
    Effect.sync(() => {
      const decode = Schema.decodeUnknownEither(StateCreate)
      const result = decode({ type: "SCHEDULED", state_details: { scheduled_time: "2026-01-01T00:00:00Z" } })
      expect(Either.isRight(result)).toBe(true)
      const state = Either.getOrThrow(result)
      expect(state.state_details.scheduled_time).toEqual(new Date("2026-01-01T00:00:00Z"))
      expect(agrees("scheduled", StateCreate, { type: "SCHEDULED", state_details: { scheduled_time: "2026-01-01T00:00:00Z" } })).toBe("value")
    }))
})
