import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { globMatches, likePattern, parseGlob } from "../../src/events/glob.ts"
import { TestDatabase } from "../support/database.ts"

/** CPU time this process has used, in ms: unlike the wall clock, not stretched by other work on the machine. */
const cpuMillis = () => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

/** The semantics written the slow, obvious way: dynamic programming over code points. */
const slowMatches = (pattern: string, value: string | undefined): boolean => {
  if (value === undefined) return false
  const negated = pattern.startsWith("!")
  const p = [...(negated ? pattern.slice(1) : pattern)]
  const t = [...value]
  // can[i][j]: p[i..] matches t[j..]
  const can = Array.from({ length: p.length + 1 }, () => new Array<boolean>(t.length + 1).fill(false))
  can[p.length]![t.length] = true
  for (let i = p.length - 1; i >= 0; i--) {
    for (let j = t.length; j >= 0; j--) {
      can[i]![j] =
        p[i] === "*"
          ? can[i + 1]![j]! || (j < t.length && can[i]![j + 1]!)
          : j < t.length && (p[i] === "?" || p[i] === t[j]) && can[i + 1]![j + 1]!
    }
  }
  return negated ? !can[0]![0]! : can[0]![0]!
}

/** A small deterministic generator, so a failure can be replayed. */
const random = (seed: number) => () => {
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
}

const ALPHABET = ["a", "b", "*", "?", "%", "_", "\\", "[", "]", "!", "é", "𝒳"]
const samples = (count: number) => {
  const next = random(21)
  const word = (max: number, alphabet: ReadonlyArray<string>) =>
    Array.from({ length: Math.floor(next() * (max + 1)) }, () => alphabet[Math.floor(next() * alphabet.length)]).join("")
  return Array.from({ length: count }, () => ({
    pattern: word(6, ALPHABET),
    // Values mostly of the letters patterns use, so that many pairs match.
    value: word(8, ALPHABET.filter((c) => c !== "*" && c !== "?"))
  }))
}

describe("label patterns", () => {
  it("`*` matches any run, `?` one character, a leading `!` negates; everything else is itself", () => {
    const cases: Array<[string, string | undefined, boolean]> = [
      ["prefect.flow-run.*", "prefect.flow-run.abc", true],
      ["prefect.flow-run.*", "prefect.flow-run.", true],
      ["prefect.flow-run.*", "prefect.flow.abc", false],
      ["*.abc", "prefect.flow-run.abc", true],
      ["prefect.*.abc", "prefect.flow-run.abc", true],
      ["prefect.*.abc", "prefect.flow-run.abd", false],
      ["run-?", "run-1", true],
      ["run-?", "run-12", false],
      ["run-?", "run-", false],
      ["run-?", "run-𝒳", true],
      ["?", "", false],
      ["", "", true],
      ["", "x", false],
      ["*", "", true],
      ["!COMPLETED", "FAILED", true],
      ["!COMPLETED", "COMPLETED", false],
      ["!", "", false],
      ["!", "x", true],
      ["!x", undefined, false],
      ["*", undefined, false],
      ["a!b", "a!b", true],
      ["[ab]", "a", false],
      ["[ab]", "[ab]", true],
      ["100%", "100%", true],
      ["100%", "1000", false],
      ["a_b", "axb", false],
      ["a\\*", "a\\bc", true],
      ["a\\*", "a*", false]
    ]
    for (const [pattern, value, expected] of cases) expect([pattern, value, globMatches(pattern, value)]).toEqual([pattern, value, expected])
  })

  it("agrees with the obvious matcher on thousands of random pairs", () => {
    for (const { pattern, value } of samples(5000)) {
      expect([pattern, value, globMatches(pattern, value)]).toEqual([pattern, value, slowMatches(pattern, value)])
    }
  })

  it("become LIKE patterns whose own wildcards are escaped", () => {
    expect(likePattern(parseGlob("prefect.flow-run.*"))).toBe("prefect.flow-run.%")
    expect(likePattern(parseGlob("!a?b*"))).toBe("a_b%")
    expect(likePattern(parseGlob("100%_\\x"))).toBe("100\\%\\_\\\\x")
    expect(parseGlob("!a").negated).toBe(true)
  })

  it("match in time linear in the value, where a backtracking regular expression takes minutes", () => {
    const started = cpuMillis()
    expect(globMatches("*a".repeat(12) + "*b", "a".repeat(40))).toBe(false)
    expect(globMatches("*a".repeat(12) + "*b", "a".repeat(40) + "b")).toBe(true)
    expect(globMatches("!" + "*a".repeat(12) + "*b", "a".repeat(40))).toBe(true)
    expect(cpuMillis() - started).toBeLessThan(50)

    // The largest event's label against long patterns: still a fraction of a second.
    const huge = "a".repeat(1_500_000)
    const worst = [
      "*a".repeat(2000) + "*b",
      "*" + "a".repeat(5000) + "b*",
      "*b" + "a".repeat(5000) + "*",
      "*" + "a?".repeat(16) + "b*"
    ]
    for (const pattern of worst) {
      const start = cpuMillis()
      expect(globMatches(pattern, huge)).toBe(false)
      expect(cpuMillis() - start).toBeLessThan(1000)
    }
  })
})

describe("label patterns in SQL", () => {
  it.layer(TestDatabase, { timeout: 60_000 })((it) => {
    it.effect("LIKE answers exactly what matching in memory answers", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        // PostgreSQL text cannot hold NUL; every sample is valid text.
        const pairs = samples(1500)
        const rows = yield* sql<{ i: number; matched: boolean }>`
          SELECT s.i::int AS i, (s.value LIKE s.pattern ESCAPE '\\') <> s.negated AS matched
          FROM unnest(${pairs.map((_, i) => i)}::int[], ${pairs.map((p) => p.value)}::text[],
                      ${pairs.map((p) => likePattern(parseGlob(p.pattern)))}::text[],
                      ${pairs.map((p) => parseGlob(p.pattern).negated)}::boolean[]) AS s(i, value, pattern, negated)
          ORDER BY s.i
        `
        expect(rows).toHaveLength(pairs.length)
        for (const row of rows) {
          const { pattern, value } = pairs[row.i]!
          expect([pattern, value, row.matched]).toEqual([pattern, value, globMatches(pattern, value)])
        }
      }))
  })
})
