import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Exit, Layer } from "effect"
import type pg from "pg"
import { DatabasePool } from "../../src/database/client.ts"
import { DEFAULT_STATEMENT_CACHE_SIZE, statementCacheSize } from "../../src/database/prepared.ts"
import { transaction } from "../../src/database/transactions.ts"
import { onServer, scopedDatabase } from "../support/database.ts"
import { testServer } from "../support/server.ts"

/**
 * A one-connection client of a fresh database (so every statement shares one session), keeping
 * `statementCache` statements (the mechanism is the same on PGlite; the server keeps none there).
 */
const oneSession = (statementCache = DEFAULT_STATEMENT_CACHE_SIZE) =>
  Effect.gen(function* () {
    const database = yield* scopedDatabase({ migrated: false })
    const context = yield* Layer.build(database.connect({ maxConnections: 1, statementCache }))
    return Context.get(context, SqlClient.SqlClient)
  })

/** The texts prepared on the session, by name. */
const prepared = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ name: string; statement: string }>`SELECT name, statement FROM pg_prepared_statements ORDER BY prepare_time, name`,
    (rows) => rows.map((row) => ({ name: row.name, statement: row.statement }))
  )

/** A statement read once (so kept), then its table given a new column, as a migration would. */
const readThenChangeTable = Effect.gen(function* () {
  const sql = yield* oneSession()
  yield* sql`CREATE TABLE changing (id int PRIMARY KEY, a text)`
  yield* sql`INSERT INTO changing VALUES (${1}, ${"one"})`
  const read = sql`SELECT * FROM changing WHERE id = ${1}`
  expect(yield* read).toEqual([{ id: 1, a: "one" }])
  yield* sql`ALTER TABLE changing ADD COLUMN b text NOT NULL DEFAULT 'new'`
  return { read, sql }
})

describe("prepared statements kept on each connection", () => {
  it("take their size from the two settings: the default unless one is set, off when either is 0", () => {
    expect(statementCacheSize({ statement_cache_size: null, prepared_statement_cache_size: null })).toBe(DEFAULT_STATEMENT_CACHE_SIZE)
    expect(DEFAULT_STATEMENT_CACHE_SIZE).toBe(100)
    expect(statementCacheSize({ statement_cache_size: 20, prepared_statement_cache_size: null })).toBe(20)
    expect(statementCacheSize({ statement_cache_size: null, prepared_statement_cache_size: 30 })).toBe(30)
    expect(statementCacheSize({ statement_cache_size: 20, prepared_statement_cache_size: 30 })).toBe(30)
    expect(statementCacheSize({ statement_cache_size: 0, prepared_statement_cache_size: 30 })).toBe(0)
    expect(statementCacheSize({ statement_cache_size: 20, prepared_statement_cache_size: 0 })).toBe(0)
  })

  it.scoped("a statement with parameters is prepared once on the session and answers as before; one without stays unnamed", () =>
    Effect.gen(function* () {
      const sql = yield* oneSession()
      for (const n of [1, 2, 3]) {
        expect(yield* sql<{ x: number; label: string }>`SELECT ${n}::int AS x, ${`n${n}`}::text AS label`).toEqual([{ x: n, label: `n${n}` }])
      }
      expect(yield* sql`SELECT 7 AS seven`).toEqual([{ seven: 7 }])
      const kept = yield* prepared(sql)
      expect(kept.map((row) => row.statement)).toEqual(["SELECT $1::int AS x, $2::text AS label"])
      expect(kept[0]!.name).toMatch(/^baton_[A-Za-z0-9_-]+$/)
    }))

  it.scoped("every way node-postgres takes a statement is answered, prepared: text and values, a config, a config with values apart; callback or promise", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: false })
      const context = yield* Layer.build(database.connect({ maxConnections: 1, statementCache: DEFAULT_STATEMENT_CACHE_SIZE }))
      const pool = Context.get(context, DatabasePool).use as pg.Pool
      const text = "SELECT $1::int + 1 AS next"
      const viaCallback = (...args: Array<unknown>) =>
        Effect.async<ReadonlyArray<unknown>, Error>((resume) => {
          const callback = (error: Error | null, result?: pg.QueryResult) =>
            resume(error ? Effect.fail(error) : Effect.succeed(result!.rows))
          ;(pool.query as unknown as (...a: Array<unknown>) => void)(...args, callback)
        })
      expect(yield* viaCallback(text, [1])).toEqual([{ next: 2 }])
      expect(yield* viaCallback({ text, values: [2] })).toEqual([{ next: 3 }])
      expect(yield* viaCallback({ text, values: [9] }, [3])).toEqual([{ next: 4 }])
      expect(yield* viaCallback({ text }, [4])).toEqual([{ next: 5 }])
      const rows = (result: Promise<pg.QueryResult>) => Effect.map(Effect.promise(() => result), (answer) => answer.rows)
      expect(yield* rows(pool.query(text, [5]))).toEqual([{ next: 6 }])
      expect(yield* rows(pool.query({ text, values: [6] }))).toEqual([{ next: 7 }])
      const client = yield* Effect.acquireRelease(Effect.promise(() => pool.connect()), (client) => Effect.sync(() => client.release()))
      expect(yield* rows(client.query({ text, values: [7] }))).toEqual([{ next: 8 }])
      expect(yield* rows(client.query({ text, values: [1], rowMode: "array" }))).toEqual([[2]])
      // One statement on the session, kept under its name.
      const kept = yield* Effect.promise(() => client.query("SELECT statement FROM pg_prepared_statements"))
      expect(kept.rows).toEqual([{ statement: text }])
    }))

  it.scoped("a kept statement's rows are described once a connection: the next executions send no Describe and read the same rows", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: false })
      const context = yield* Layer.build(database.connect({ maxConnections: 1, statementCache: DEFAULT_STATEMENT_CACHE_SIZE }))
      const pool = Context.get(context, DatabasePool).use as pg.Pool
      const client = yield* Effect.acquireRelease(Effect.promise(() => pool.connect()), (client) => Effect.sync(() => client.release()))
      const connection = (client as unknown as { connection: { describe: (...args: Array<unknown>) => unknown } }).connection
      let describes = 0
      const describe = connection.describe
      connection.describe = function(this: unknown, ...args: Array<unknown>) {
        describes++
        return describe.apply(this, args)
      }
      const rows = (text: string, values: Array<unknown>) => Effect.map(Effect.promise(() => client.query(text, values)), (answer) => answer.rows)
      yield* Effect.promise(() => client.query("CREATE TABLE described (id int PRIMARY KEY, at timestamptz, tags jsonb)"))
      const insert = "INSERT INTO described VALUES ($1, $2, $3)"
      const read = "SELECT id, at, tags, $2::text AS label FROM described WHERE id <= $1 ORDER BY id"
      for (const id of [1, 2, 3]) expect(yield* rows(insert, [id, new Date(Date.UTC(2026, 0, id)), JSON.stringify([`t${id}`])])).toEqual([])
      expect(describes).toBe(1)
      for (const n of [1, 3, 2]) {
        expect(yield* rows(read, [n, `n${n}`])).toEqual([1, 2, 3].slice(0, n).map((id) => ({
          id,
          at: new Date(Date.UTC(2026, 0, id)),
          tags: [`t${id}`],
          label: `n${n}`
        })))
      }
      expect(describes).toBe(2)
      // A value that cannot be sent fails that execution alone, as before.
      const unsendable = { toPostgres: () => { throw new Error("not sendable") } }
      expect(yield* Effect.flip(Effect.tryPromise(() => client.query(read, [unsendable, "x"])))).toBeDefined()
      expect(yield* rows(read, [1, "again"])).toEqual([{ id: 1, at: new Date(Date.UTC(2026, 0, 1)), tags: ["t1"], label: "again" }])
    }))

  it.scoped("at most the cache's size are kept: the least recently used is deallocated", () =>
    Effect.gen(function* () {
      const sql = yield* oneSession(2)
      const a = sql`SELECT ${1}::int AS a`
      const b = sql`SELECT ${2}::int AS b`
      const c = sql`SELECT ${3}::int AS c`
      expect(yield* a).toEqual([{ a: 1 }])
      expect(yield* b).toEqual([{ b: 2 }])
      expect(yield* a).toEqual([{ a: 1 }])
      expect(yield* c).toEqual([{ c: 3 }])
      expect((yield* prepared(sql)).map((row) => row.statement).sort()).toEqual(["SELECT $1::int AS a", "SELECT $1::int AS c"])
      // The one let go is prepared again when it comes back, in place of the least recent.
      expect(yield* b).toEqual([{ b: 2 }])
      expect((yield* prepared(sql)).map((row) => row.statement).sort()).toEqual(["SELECT $1::int AS b", "SELECT $1::int AS c"])
    }))

  it.scoped("a full cache in a transaction sends a new statement unnamed and deallocates nothing until outside", () =>
    Effect.gen(function* () {
      const sql = yield* oneSession(1)
      expect(yield* sql`SELECT ${1}::int AS a`).toEqual([{ a: 1 }])
      const inside = yield* transaction(
        sql,
        Effect.gen(function* () {
          const b = yield* sql`SELECT ${2}::int AS b`
          return { b, kept: (yield* prepared(sql)).map((row) => row.statement) }
        })
      )
      expect(inside).toEqual({ b: [{ b: 2 }], kept: ["SELECT $1::int AS a"] })
      expect(yield* sql`SELECT ${2}::int AS b`).toEqual([{ b: 2 }])
      expect((yield* prepared(sql)).map((row) => row.statement)).toEqual(["SELECT $1::int AS b"])
    }))

  it.scoped("a very long statement, or one of more than 1,000 parameters (a batch of rows), goes unnamed", () =>
    Effect.gen(function* () {
      const sql = yield* oneSession()
      const long = `SELECT $1::int AS x -- ${"x".repeat(17_000)}`
      expect(yield* sql.unsafe(long, [1])).toEqual([{ x: 1 }])
      const many = Array.from({ length: 1_001 }, (_, i) => i)
      const text = `SELECT cardinality(ARRAY[${many.map((i) => `$${i + 1}::int`).join(", ")}]) AS n`
      expect(yield* sql.unsafe(text, many)).toEqual([{ n: 1_001 }])
      expect(yield* sql.unsafe(`SELECT $1::int AS x`, [1])).toEqual([{ x: 1 }])
      expect((yield* prepared(sql)).map((row) => row.statement)).toEqual(["SELECT $1::int AS x"])
    }))

  it.scoped("a cache of 0 prepares nothing", () =>
    Effect.gen(function* () {
      const sql = yield* oneSession(0)
      expect(yield* sql`SELECT ${5}::int AS five`).toEqual([{ five: 5 }])
      expect(yield* sql`SELECT ${5}::int AS five`).toEqual([{ five: 5 }])
      expect(yield* prepared(sql)).toEqual([])
    }))

  it.scoped("a table changed under a kept statement (a migration): answered with the new columns, and kept again", () =>
    Effect.gen(function* () {
      const { read, sql } = yield* readThenChangeTable
      // PostgreSQL refuses the kept plan (its columns changed); the statement runs again unnamed.
      expect(yield* read).toEqual([{ id: 1, a: "one", b: "new" }])
      expect(yield* read).toEqual([{ id: 1, a: "one", b: "new" }])
      expect((yield* prepared(sql)).map((row) => row.statement)).toContain("SELECT * FROM changing WHERE id = $1")
    }))

  it.scoped("in a transaction the refused statement fails the transaction; the next one outside answers", () =>
    Effect.gen(function* () {
      const { read, sql } = yield* readThenChangeTable
      const inside = yield* Effect.exit(transaction(sql, read))
      expect(Exit.isFailure(inside)).toBe(true)
      expect(yield* read).toEqual([{ id: 1, a: "one", b: "new" }])
    }))

  it.scoped("statements deallocated behind the cache's back (DEALLOCATE ALL) are prepared again", () =>
    Effect.gen(function* () {
      const sql = yield* oneSession()
      const read = sql`SELECT ${4}::int AS four`
      expect(yield* read).toEqual([{ four: 4 }])
      yield* sql`DEALLOCATE ALL`
      expect(yield* prepared(sql)).toEqual([])
      expect(yield* read).toEqual([{ four: 4 }])
      expect(yield* read).toEqual([{ four: 4 }])
      expect((yield* prepared(sql)).map((row) => row.statement)).toEqual(["SELECT $1::int AS four"])
    }))
})

/** What the server's own connection has prepared, after a statement with a parameter (one session: a transaction). */
const preparedByServer = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return yield* transaction(
    sql,
    Effect.gen(function* () {
      yield* sql`SELECT ${1}::int AS one`
      return (yield* prepared(sql)).map((row) => row.statement)
    })
  )
})

describe("the server's connections", () => {
  it.layer(testServer())((it) => {
    it.effect("prepare their statements by default on PostgreSQL, none on the embedded database (one session for every connection)", () =>
      Effect.gen(function* () {
        const kept = yield* preparedByServer
        if (onServer()) expect(kept).toContain("SELECT $1::int AS one")
        else expect(kept).toEqual([])
      }))
  })
})

describe("the server's connections with server.database.sqlalchemy.connect_args.statement_cache_size 0", () => {
  layer(testServer({ overrides: { "server.database.sqlalchemy.connect_args.statement_cache_size": 0 } }))((it) => {
    it.effect("prepare nothing (as PgBouncer in transaction mode needs)", () =>
      Effect.gen(function* () {
        expect(yield* preparedByServer).toEqual([])
      }))
  })
})
