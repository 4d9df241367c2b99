import { describe, expect, it } from "@effect/vitest"
import { checkAgainstSchema } from "../../src/domain/json-schema.ts"
import { MAX_PATTERN_LENGTH, patternMatches, patternProblem, regExpEngine } from "../../src/domain/regex.ts"

const HOSTILE = `${"a".repeat(30)}!`

describe("user patterns", () => {
  it("match in linear time: ^(a+)+$ against 30 a's and a '!' answers at once", () => {
    const started = performance.now()
    expect(patternMatches("^(a+)+$", HOSTILE)).toBe(false)
    expect(patternMatches("^(a+)+$", "a".repeat(30))).toBe(true)
    expect(patternMatches("^(a|aa)+$", `${"a".repeat(5000)}!`)).toBe(false)
    expect(patternMatches("(x+x+)+y", "x".repeat(100_000))).toBe(false)
    expect(performance.now() - started).toBeLessThan(500)
  })

  it("read ECMAScript syntax, as JSON Schema patterns are written, unanchored", () => {
    expect(patternMatches("(?<word>ab)c", "xabcx")).toBe(true)
    expect(patternMatches("^\\u0041\\/\\d{2}$", "A/12")).toBe(true)
    expect(patternMatches("^[a-z]+$", "abc1")).toBe(false)
    expect(patternMatches("^.$", "𝒳")).toBe(true)
    expect(patternMatches("", "anything")).toBe(true)
  })

  it("that RE2 cannot run, or that are too long, are refused with the reason", () => {
    expect(patternProblem("(?=a)a")).toMatch(/^the pattern "\(\?=a\)a" cannot be used \(.*\); patterns are matched with RE2, which has no lookahead, lookbehind or backreferences$/)
    expect(patternProblem("(?<=a)b")).toMatch(/cannot be used/)
    expect(patternProblem("(?!a)b")).toMatch(/cannot be used/)
    expect(patternProblem("(a)\\1")).toMatch(/cannot be used/)
    expect(patternProblem("a".repeat(MAX_PATTERN_LENGTH))).toBeUndefined()
    expect(patternProblem("a".repeat(MAX_PATTERN_LENGTH + 1))).toBe(
      `the pattern "${"a".repeat(80)}…" is longer than ${MAX_PATTERN_LENGTH} characters`
    )
    expect(patternProblem("^[a-z]+$")).toBeUndefined()
  })

  it("are what ajv runs: each compiled pattern names its own source, and a schema RE2 cannot run is unusable", () => {
    expect(String(regExpEngine("a+", "u"))).not.toBe(String(regExpEngine("b+", "u")))
    const started = performance.now()
    expect(checkAgainstSchema({ type: "string", pattern: "^(a+)+$" }, HOSTILE)).toEqual({
      valid: false,
      field: null,
      message: `'${HOSTILE}' does not match '^(a+)+$'`
    })
    expect(checkAgainstSchema({ type: "object", patternProperties: { "^(a+)+$": { type: "integer" } } }, { [HOSTILE]: "x", aaa: 1 })).toEqual({ valid: true })
    expect(performance.now() - started).toBeLessThan(500)
    expect(checkAgainstSchema({ type: "string", pattern: "(?=a)" }, "a")).toMatchObject({
      valid: false,
      unusable: true,
      message: expect.stringMatching(/^Invalid schema: the pattern "\(\?=a\)" cannot be used/)
    })
  })
})
