/**
 * Each test file's own database, created from the run's migrated template and dropped afterwards:
 * an embedded PGlite loaded from the template dump and served on a socket (the same path production
 * uses), or, with TEST_DATABASE_URL, a PostgreSQL database copied from the template database.
 *
 * Embedded, loading a PGlite takes most of a second, so each test worker keeps one loaded and hands
 * it to its files one after another, emptied of every row (the template holds no rows but the
 * migrations table) as each file takes it. A file that wants a second database while the worker's
 * is taken gets a PGlite of its own.
 */
import { PGlite } from "@electric-sql/pglite"
import type { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { inject } from "vitest"
import { type DatabasePool, layerPg } from "../../src/database/client.ts"
import { serveEmbedded } from "../../src/database/embedded.ts"
import { MIGRATIONS_TABLE } from "../../src/database/migrator.ts"
import { statementCacheSize } from "../../src/database/prepared.ts"
import { Settings } from "../../src/settings/settings.ts"
import { withDatabase } from "./global-setup.ts"

const testDatabaseUrl = () => process.env.TEST_DATABASE_URL

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "baton-db-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Runs one statement on the server's maintenance connection. */
const adminQuery = (url: string, statement: string) =>
  Effect.promise(async () => {
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    try {
      await admin.query(statement)
    } finally {
      await admin.end()
    }
  })

/** A PostgreSQL database for this scope, copied from `template` (or empty), dropped at the end. */
const serverDatabase = (url: string, template: string | undefined) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const name = `baton_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
      yield* adminQuery(url, `CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ""}`)
      return name
    }),
    (name) => adminQuery(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  )

interface WorkerDatabase {
  readonly socketDir: string
  taken: boolean
}

/** The worker's loaded PGlite, kept for the life of the process (globalThis: files share it). */
const workerDatabase = (): Promise<WorkerDatabase> => {
  const holder = globalThis as { batonWorkerDatabase?: Promise<WorkerDatabase> }
  holder.batonWorkerDatabase ??= Effect.runPromise(
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "baton-db-"))
      process.once("exit", () => fs.rmSync(dir, { recursive: true, force: true }))
      const dump = new Blob([fs.readFileSync(inject("embeddedDump"))])
      // Its scope is never closed: the database lives as long as the worker.
      const scope = yield* Scope.make()
      yield* serveEmbedded({ socketDir: dir, loadDataDir: dump }).pipe(Scope.extend(scope), Effect.orDie)
      return { socketDir: dir, taken: false }
    })
  )
  return holder.batonWorkerDatabase
}

/**
 * Empties every table but the migrations' own, as the template left them. Only the tables that hold
 * rows are emptied, with DELETE and the foreign keys' triggers off for the statement's session
 * (every row of each goes, so none is left dangling): a TRUNCATE of every table cost a tenth of a
 * second for each file, this a few milliseconds. The schema has no sequences to restart.
 */
const emptyTables = (socketDir: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ host: socketDir, user: "postgres", database: "postgres" })
    await client.connect()
    try {
      const { rows: tables } = await client.query<{ name: string }>(
        `SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public' AND tablename <> '${MIGRATIONS_TABLE}'`
      )
      if (tables.length === 0) return
      const probe = tables.map(({ name }) => `SELECT '${name}' AS name WHERE EXISTS (SELECT 1 FROM ${name})`).join(" UNION ALL ")
      const { rows: filled } = await client.query<{ name: string }>(probe)
      if (filled.length === 0) return
      await client.query(
        `BEGIN; SET LOCAL session_replication_role = replica; ${filled.map(({ name }) => `DELETE FROM ${name};`).join(" ")} COMMIT`
      )
    } finally {
      await client.end()
    }
  })

/** The worker's database for this scope when it is free, emptied; undefined when another scope has it. */
const takeWorkerDatabase = Effect.acquireRelease(
  Effect.flatMap(
    Effect.promise(() => workerDatabase()),
    (database) => {
      if (database.taken) return Effect.succeed(undefined)
      database.taken = true
      return Effect.as(emptyTables(database.socketDir), database)
    }
  ),
  (database) =>
    Effect.sync(() => {
      if (database) database.taken = false
    })
)

// The server's own client (src/database/client.ts), with its pool and its way of cancelling statements.
const embeddedClient = (socketDir: string, options: ConnectOptions = {}) =>
  layerPg({ host: socketDir, username: "postgres", database: "postgres", maxConnections: 1 }, "skip", options.statementCache ?? 0)
    .pipe(Layer.orDie)

export interface ConnectOptions {
  readonly maxConnections?: number
  /** Prepared statements kept a connection (src/database/prepared.ts); as the server keeps them unless given (none embedded). */
  readonly statementCache?: number
}

export interface ScopedDatabase {
  /**
   * A new connection pool to the database (several may be open at once): of `maxConnections`
   * (10 unless given) on a server, of one embedded, as the server's.
   */
  readonly connect: (options?: ConnectOptions) => Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | DatabasePool>
  /** The database's connection URL on a PostgreSQL server; undefined for an embedded one. */
  readonly url: string | undefined
}

/** A database that lives as long as the scope: migrated from the run's template, or empty. */
export const scopedDatabase = (options: { readonly migrated: boolean }) =>
  Effect.gen(function* () {
    const url = testDatabaseUrl()
    if (url) {
      const name = yield* serverDatabase(url, options.migrated ? inject("templateDatabase") : undefined)
      const connect = (options: ConnectOptions = {}) =>
        layerPg({ url: Redacted.make(withDatabase(url, name)), maxConnections: options.maxConnections ?? 10 }, "own-connection", options.statementCache)
          .pipe(Layer.orDie)
      return { connect, url: withDatabase(url, name) } satisfies ScopedDatabase
    }
    if (options.migrated) {
      const shared = yield* takeWorkerDatabase
      if (shared) return { connect: (options?: ConnectOptions) => embeddedClient(shared.socketDir, options), url: undefined } satisfies ScopedDatabase
    }
    const dir = yield* tempDir
    const dump = new Blob([fs.readFileSync(inject(options.migrated ? "embeddedDump" : "emptyEmbeddedDump"))])
    const embedded = yield* serveEmbedded({ socketDir: dir, loadDataDir: dump }).pipe(Effect.orDie)
    return { connect: (options?: ConnectOptions) => embeddedClient(embedded.socketDir, options), url: undefined } satisfies ScopedDatabase
  })

/** A client of a new database; under a test server's Settings, keeping the statements they say, as the server's. */
const clientFor = (options: { readonly migrated: boolean }) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const database = yield* scopedDatabase(options)
      const settings = yield* Effect.serviceOption(Settings)
      return database.connect(
        Option.isSome(settings) && onServer()
          ? { statementCache: statementCacheSize(settings.value.server.database.sqlalchemy.connect_args) }
          : {}
      )
    })
  )

/** This test file's migrated database (embedded, or PostgreSQL with TEST_DATABASE_URL). */
export const TestDatabase = clientFor({ migrated: true })

/** A fresh database with no tables at all, for migration tests. */
export const FreshDatabase = clientFor({ migrated: false })

/**
 * The template loaded into an embedded database directory, once: kept beside the dump it was made
 * from (so it is as current as the dump), and copied into each seeded home. Loading a dump into a
 * PGlite costs seconds of CPU; copying the directory, a fifth of a second. Concurrent workers may
 * both make it; the first rename wins.
 */
const seededDatabaseDir = async (): Promise<string> => {
  const dump = inject("embeddedDump")
  const dir = path.join(path.dirname(dump), "home-database")
  if (fs.existsSync(dir)) return dir
  const work = fs.mkdtempSync(path.join(path.dirname(dump), "home-database-"))
  const db = await PGlite.create({ dataDir: work, loadDataDir: new Blob([fs.readFileSync(dump)]) })
  await db.close()
  try {
    fs.renameSync(work, dir)
  } catch {
    fs.rmSync(work, { recursive: true, force: true })
  }
  return dir
}

/**
 * A BATON_HOME whose embedded database is a copy of the run's migrated template, removed with the
 * scope: a server started on it neither runs initdb nor migrates (seconds each). A run against
 * PostgreSQL has no embedded template: there the home starts empty.
 */
export const seededHome = Effect.acquireRelease(
  Effect.promise(async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "baton-home-"))
    if (!inject("embeddedDump")) return home
    fs.cpSync(await seededDatabaseDir(), path.join(home, "database"), { recursive: true })
    return home
  }),
  (home) => Effect.sync(() => fs.rmSync(home, { recursive: true, force: true }))
)

/** Whether the tests run against a real PostgreSQL server. */
export const onServer = () => testDatabaseUrl() !== undefined
