import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { compiled } from "../../src/database/statements.ts"
import { testServer } from "../support/server.ts"

type Compilable = Parameters<typeof compiled>[0]
const internals = (statement: unknown) => statement as Compilable

describe("statements compiled by shape", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("give the text and parameters @effect/sql compiles, the same text each time for a shape, and never one shape's text for another", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const made = [
          () => sql`SELECT ${1}::int AS a, ${"x"}::text AS b`,
          () => sql`SELECT ${sql("flow_run")}.id FROM ${sql("flow_run")} WHERE id = ${"00000000-0000-4000-8000-000000000001"}`,
          () => sql`SELECT 1 WHERE ${sql`${2} = ${2}`} AND ${sql.literal("true")}`,
          () => sql`SELECT 1 WHERE ${sql.literal("1 = 1")}`,
          () => sql`SELECT 1 WHERE ${sql.literal("2 = 2")}`,
          () => sql`SELECT ${sql("a")} FROM t`,
          () => sql`SELECT ${sql("b")} FROM t`,
          () => sql`SELECT 1 WHERE 1 IN ${sql.in([1, 2, 3])}`,
          () => sql`SELECT 1 WHERE ${sql.unsafe("$1::int = 1", [1])}`,
          () => sql`SELECT ${sql.and([sql`a = ${1}`, sql`b = ${2}`])}`,
          () => sql`SELECT ${sql.and([sql`a = ${1}`, sql`b = ${2}`, sql`c = ${3}`])}`
        ]
        const texts = new Map<string, number>()
        for (const [i, make] of made.entries()) {
          const first = compiled(internals(make()))
          const again = make()
          const second = compiled(internals(again))
          // What @effect/sql itself compiles, both times.
          expect(first).toEqual(internals(make()).compile())
          expect(second).toEqual(internals(again).compile())
          texts.set(second[0], i)
        }
        // Eleven statements, eleven texts: no two shapes met in one.
        expect(texts.size).toBe(made.length)
        // A shape's text is kept and given again (the same string), whatever the values.
        const one = compiled(internals(sql`SELECT ${1}::int AS a, ${"x"}::text AS b`))
        const other = compiled(internals(sql`SELECT ${2}::int AS a, ${"y"}::text AS b`))
        expect(other[0]).toBe(one[0])
        expect(other[1]).toEqual([2, "y"])
        // Run the short way, twice with other values: each its own rows.
        expect(yield* sql<{ a: number; b: string }>`SELECT ${5}::int AS a, ${"five"}::text AS b`).toEqual([{ a: 5, b: "five" }])
        expect(yield* sql<{ a: number; b: string }>`SELECT ${6}::int AS a, ${"six"}::text AS b`).toEqual([{ a: 6, b: "six" }])
        // Literals made at run time make shapes of their own.
        for (const n of [3, 4]) {
          expect(yield* sql<{ n: number }>`SELECT ${sql.literal(String(n))}::int + ${1}::int AS n`).toEqual([{ n: n + 1 }])
        }
      })
    )
  })
})
