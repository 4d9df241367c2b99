/**
 * Once per test run: a migrated template database that every test file copies. Embedded: a dump of
 * a migrated in-memory PGlite in a temp file. PostgreSQL (TEST_DATABASE_URL): a template database.
 */
import type { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import type { TestProject } from "vitest/node"
import { serveEmbedded } from "../../src/database/embedded.ts"
import { migrate } from "../../src/database/migrator.ts"

declare module "vitest" {
  export interface ProvidedContext {
    embeddedDump: string
    /** A dump of an embedded database with no tables, for migration tests (initdb costs seconds). */
    emptyEmbeddedDump: string
    templateDatabase: string
  }
}

export const withDatabase = (url: string, database: string) => {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

const migrateWith = (client: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, unknown>) =>
  Effect.runPromise(Effect.scoped(Effect.provide(migrate, client)))

export default async function setup(project: TestProject) {
  const url = process.env.TEST_DATABASE_URL
  if (url) {
    const template = `baton_template_${process.pid}_${Date.now()}`
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${template}`)
    await migrateWith(PgClient.layer({ url: Redacted.make(withDatabase(url, template)), maxConnections: 1 }))
    project.provide("templateDatabase", template)
    project.provide("embeddedDump", "")
    project.provide("emptyEmbeddedDump", "")
    return async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`)
      await admin.end()
    }
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "baton-test-"))
  const dumpFile = path.join(dir, "template.tar.gz")
  const emptyDumpFile = path.join(dir, "empty.tar.gz")
  await Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const embedded = yield* serveEmbedded({ socketDir: path.join(dir, "run") })
        const write = (file: string) =>
          Effect.promise(async () => {
            const dump = await embedded.db.dumpDataDir("gzip")
            fs.writeFileSync(file, Buffer.from(await dump.arrayBuffer()))
          })
        yield* write(emptyDumpFile)
        yield* Effect.provide(migrate, PgClient.layer({ host: embedded.socketDir, username: "postgres", database: "postgres", maxConnections: 1 }))
        yield* write(dumpFile)
      })
    )
  )
  project.provide("embeddedDump", dumpFile)
  project.provide("emptyEmbeddedDump", emptyDumpFile)
  project.provide("templateDatabase", "")
  return () => fs.rmSync(dir, { recursive: true, force: true })
}
