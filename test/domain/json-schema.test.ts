import { describe, expect, it } from "@effect/vitest"
import { checkAgainstSchema } from "../../src/domain/json-schema.ts"

describe("checkAgainstSchema", () => {
  it("validates with a schema seen before, passed again as a fresh copy, the same way", () => {
    const schema = () => ({ $id: "https://example.com/params", type: "object", properties: { x: { type: "integer" } } })
    for (let i = 0; i < 3; i++) {
      expect(checkAgainstSchema(schema(), { x: 1 })).toEqual({ valid: true })
      expect(checkAgainstSchema(schema(), { x: "a" })).toEqual({
        valid: false,
        field: "x",
        message: "'a' is not of type 'integer'"
      })
    }
  })

  it("keeps validating correctly past the number of schemas it keeps compiled", () => {
    for (let i = 0; i < 300; i++) {
      const schema = { type: "object", properties: { [`p${i}`]: { type: "string" } } }
      expect(checkAgainstSchema(schema, { [`p${i}`]: "ok" }).valid).toBe(true)
      expect(checkAgainstSchema(schema, { [`p${i}`]: 3 }).valid).toBe(false)
    }
    const first = { type: "object", properties: { p0: { type: "string" } } }
    expect(checkAgainstSchema(first, { p0: 3 }).valid).toBe(false)
  })

  it("reports a schema that does not compile as invalid", () => {
    const check = checkAgainstSchema({ type: "no-such-type" }, 1)
    expect(check.valid).toBe(false)
  })
})
