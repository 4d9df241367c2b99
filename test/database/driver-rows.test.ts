/**
 * The rows node-postgres hands Baton, built by src/database/driver-rows.ts: the same values, names
 * and order as node-postgres builds them, for every kind of column list.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { createRequire } from "node:module"
import pg from "pg"
import { DatabasePool } from "../../src/database/client.ts"
import { installDriverRows, ROW_SHAPES_KEPT } from "../../src/database/driver-rows.ts"
import { scopedDatabase } from "../support/database.ts"

/** The pool of a fresh connection to this file's database (the client installs the row builder). */
const pool = Effect.gen(function* () {
  const database = yield* scopedDatabase({ migrated: false })
  const context = yield* Layer.build(database.connect({ maxConnections: 1 }))
  return Context.get(context, DatabasePool).use as pg.Pool
})

const query = (on: pg.Pool, config: pg.QueryConfig) => Effect.promise(() => on.query(config))

describe("rows from the database", () => {
  it.scoped("carry every column in order, parsed by its type, as plain objects", () =>
    Effect.gen(function* () {
      const on = yield* pool
      const { rows } = yield* query(on, {
        text: `SELECT 1 AS one, 'text' AS words, NULL::text AS nothing, true AS yes, 9007199254740993::bigint AS big,
          '2026-11-28T15:00:00.123Z'::timestamptz AS at, '{"a":[1,2]}'::jsonb AS doc, ARRAY['x','y'] AS list,
          1.5::numeric AS amount, '7d1f2c52-0d37-4d4c-9a77-4a3f2f0b6c11'::uuid AS id`
      })
      expect(rows).toEqual([{
        one: 1,
        words: "text",
        nothing: null,
        yes: true,
        big: "9007199254740993",
        at: new Date("2026-11-28T15:00:00.123Z"),
        doc: { a: [1, 2] },
        list: ["x", "y"],
        amount: "1.5",
        id: "7d1f2c52-0d37-4d4c-9a77-4a3f2f0b6c11"
      }])
      expect(Object.keys(rows[0]!)).toEqual(["one", "words", "nothing", "yes", "big", "at", "doc", "list", "amount", "id"])
      expect(Object.getPrototypeOf(rows[0]!)).toBe(Object.prototype)
    }))

  it.scoped("a repeated name keeps its first place and its last value; odd names are plain keys; __proto__ is an own column", () =>
    Effect.gen(function* () {
      const on = yield* pool
      const repeated = yield* query(on, { text: "SELECT 1 AS a, 2 AS b, 3 AS a" })
      expect(repeated.rows).toEqual([{ a: 3, b: 2 }])
      expect(Object.keys(repeated.rows[0]!)).toEqual(["a", "b"])

      const odd = yield* query(on, { text: `SELECT 1 AS "quote""d", 2 AS "back\\slash", 3 AS "line
break", 4 AS "}; throw 1; //", 5 AS "ünï"` })
      expect(odd.rows[0]).toEqual({ "quote\"d": 1, "back\\slash": 2, "line\nbreak": 3, "}; throw 1; //": 4, "ünï": 5 })

      const proto = yield* query(on, { text: `SELECT 1 AS "__proto__", 2 AS other` })
      const row = proto.rows[0]!
      expect(Object.getPrototypeOf(row)).toBe(Object.prototype)
      expect(Object.getOwnPropertyDescriptor(row, "__proto__")?.value).toBe(1)
      expect(row.other).toBe(2)
    }))

  it.scoped("many rows, no rows, one statement after another of other columns; a query's own types and binary results", () =>
    Effect.gen(function* () {
      const on = yield* pool
      const many = yield* query(on, { text: "SELECT n, n * 2 AS twice, CASE WHEN n % 2 = 0 THEN NULL ELSE 'odd' END AS kind FROM generate_series(1, 5) n" })
      expect(many.rows).toEqual([1, 2, 3, 4, 5].map((n) => ({ n, twice: n * 2, kind: n % 2 === 0 ? null : "odd" })))
      const none = yield* query(on, { text: "SELECT 1 AS n WHERE false" })
      expect(none.rows).toEqual([])
      expect(none.fields.map((field) => field.name)).toEqual(["n"])

      const custom = yield* query(on, {
        text: "SELECT 41 AS n, 'x' AS s",
        types: { getTypeParser: () => (value: string) => `custom:${value}` }
      } as pg.QueryConfig)
      expect(custom.rows).toEqual([{ n: "custom:41", s: "custom:x" }])

      const binary = yield* query(on, { text: "SELECT 42::int4 AS n, NULL::int4 AS missing", binary: true } as pg.QueryConfig)
      expect(binary.rows).toEqual([{ n: 42, missing: null }])
    }))

  it.scoped("timestamptz values read as node-postgres reads them: every fraction length, other zones, early years, infinity", () =>
    Effect.gen(function* () {
      const on = yield* pool
      const texts = [
        "2026-11-28 15:00:00+00", "2026-11-28 15:00:00.1+00", "2026-11-28 15:00:00.12+00", "2026-11-28 15:00:00.123+00",
        "2026-11-28 15:00:00.1239+00", "2026-11-28 15:00:00.999999+00", "1969-12-31 23:59:59.5+00", "0099-06-01 12:00:00+00",
        "0044-03-15 12:00:00+00 BC"
      ]
      const { rows } = yield* query(on, {
        text: `SELECT value::timestamptz AS at, value::timestamptz::text AS text FROM unnest($1::text[]) AS value
          UNION ALL SELECT 'infinity'::timestamptz, 'infinity' UNION ALL SELECT '-infinity'::timestamptz, '-infinity'`,
        values: [texts]
      })
      // node-postgres's own parser, on the text PostgreSQL wrote.
      const original = createRequire(createRequire(import.meta.url).resolve("pg/lib/result.js"))("pg-types")
        .getTypeParser(1184, "text") as (text: string) => unknown
      expect(rows.length).toBe(texts.length + 2)
      for (const row of rows) expect(row.at).toEqual(original(row.text))
      expect((rows[3]!.at as Date).toISOString()).toBe("2026-11-28T15:00:00.123Z")
      expect((rows[5]!.at as Date).toISOString()).toBe("2026-11-28T15:00:00.999Z")
      // A session in another zone writes another offset: read as the original reads it.
      const zoned = yield* Effect.promise(async () => {
        const client = await on.connect()
        try {
          await client.query("SET TIME ZONE 'Asia/Kolkata'")
          return (await client.query("SELECT '2026-11-28 15:00:00.25+00'::timestamptz AS at")).rows[0].at as Date
        } finally {
          await client.query("RESET TIME ZONE")
          client.release()
        }
      })
      expect(zoned.toISOString()).toBe("2026-11-28T15:00:00.250Z")
    }))

  it("keeps a bounded number of column lists, and builds a dropped one's rows again when it comes back", () => {
    installDriverRows()
    const Result = createRequire(createRequire(import.meta.url).resolve("pg/lib/result.js"))("./result.js") as new() => {
      addFields(fields: ReadonlyArray<{ name: string; dataTypeID: number; format: string }>): void
      parseRow(values: ReadonlyArray<unknown>): object
    }
    const TEXT = 25
    const rowOf = (i: number) => {
      const result = new Result()
      result.addFields([{ name: `column_${i}`, dataTypeID: TEXT, format: "text" }, { name: "same", dataTypeID: TEXT, format: "text" }])
      return result.parseRow([`value ${i}`, null])
    }
    // More column lists than are kept, then the first ones again (dropped by now).
    for (let i = 0; i < ROW_SHAPES_KEPT + 10; i++) expect(rowOf(i)).toEqual({ [`column_${i}`]: `value ${i}`, same: null })
    for (let i = 0; i < 10; i++) expect(rowOf(i)).toEqual({ [`column_${i}`]: `value ${i}`, same: null })
  })
})
