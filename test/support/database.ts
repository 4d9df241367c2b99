/**
 * Each test file's own database, created from the run's migrated template and dropped afterwards:
 * an embedded PGlite loaded from the template dump and served on a socket (the same path production
 * uses), or, with TEST_DATABASE_URL, a PostgreSQL database copied from the template database.
 */
import type { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { inject } from "vitest"
import { serveEmbedded } from "../../src/database/embedded.ts"
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

export interface ScopedDatabase {
  /** A new connection pool to the database (several may be open at once). */
  readonly connect: () => Layer.Layer<PgClient.PgClient | SqlClient.SqlClient>
  /** The database's connection URL on a PostgreSQL server; undefined for an embedded one. */
  readonly url: string | undefined
}

/** A database that lives as long as the scope: migrated from the run's template, or empty. */
export const scopedDatabase = (options: { readonly migrated: boolean }) =>
  Effect.gen(function* () {
    const url = testDatabaseUrl()
    if (url) {
      const name = yield* serverDatabase(url, options.migrated ? inject("templateDatabase") : undefined)
      const connect = () =>
        PgClient.layer({ url: Redacted.make(withDatabase(url, name)), maxConnections: 10 }).pipe(Layer.orDie)
      return { connect, url: withDatabase(url, name) } satisfies ScopedDatabase
    }
    const dir = yield* tempDir
    const dump = options.migrated ? new Blob([fs.readFileSync(inject("embeddedDump"))]) : undefined
    const embedded = yield* serveEmbedded({ socketDir: dir, ...(dump ? { loadDataDir: dump } : {}) }).pipe(Effect.orDie)
    const connect = () =>
      PgClient.layer({ host: embedded.socketDir, username: "postgres", database: "postgres", maxConnections: 1 }).pipe(
        Layer.orDie
      )
    return { connect, url: undefined } satisfies ScopedDatabase
  })

const clientFor = (options: { readonly migrated: boolean }) =>
  Layer.unwrapScoped(Effect.map(scopedDatabase(options), (database) => database.connect()))

/** This test file's migrated database (embedded, or PostgreSQL with TEST_DATABASE_URL). */
export const TestDatabase = clientFor({ migrated: true })

/** A fresh database with no tables at all, for migration tests. */
export const FreshDatabase = clientFor({ migrated: false })

/** Whether the tests run against a real PostgreSQL server. */
export const onServer = () => testDatabaseUrl() !== undefined
