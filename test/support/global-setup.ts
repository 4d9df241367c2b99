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
import { createHash } from "node:crypto"
import { fileURLToPath } from "node:url"
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
  // The dumps depend only on the migrations and the database engine: kept between runs under
  // .scratch/, keyed by both, they spare a run the initdb and the migrations (seconds).
  const dir = path.join(ROOT, ".scratch", "test-dumps", dumpKey())
  const dumpFile = path.join(dir, "template.tar.gz")
  const emptyDumpFile = path.join(dir, "empty.tar.gz")
  if (!fs.existsSync(dumpFile) || !fs.existsSync(emptyDumpFile)) await makeDumps(dir, dumpFile, emptyDumpFile)
  project.provide("embeddedDump", dumpFile)
  project.provide("emptyEmbeddedDump", emptyDumpFile)
  project.provide("templateDatabase", "")
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

/** What the dumps are made from: every migration, the embedded server's setup, and PGlite's version. */
const dumpKey = () => {
  const hash = createHash("sha256")
  const migrations = path.join(ROOT, "src", "database", "migrations")
  for (const name of fs.readdirSync(migrations).sort()) hash.update(name).update(fs.readFileSync(path.join(migrations, name)))
  hash.update(fs.readFileSync(path.join(ROOT, "src", "database", "embedded.ts")))
  hash.update(fs.readFileSync(path.join(ROOT, "src", "database", "migrator.ts")))
  hash.update(fs.readFileSync(path.join(ROOT, "node_modules", "@electric-sql", "pglite", "package.json")))
  return hash.digest("hex").slice(0, 16)
}

/** Makes both dumps in a scratch folder beside `dir`, then moves it into place (a run killed meanwhile leaves no half dump). */
const makeDumps = async (dir: string, dumpFile: string, emptyDumpFile: string) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "baton-test-"))
  await Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const embedded = yield* serveEmbedded({ socketDir: path.join(work, "run") })
        const write = (file: string) =>
          Effect.promise(async () => {
            const dump = await embedded.db.dumpDataDir("gzip")
            fs.writeFileSync(file, Buffer.from(await dump.arrayBuffer()))
          })
        yield* write(path.join(work, "empty.tar.gz"))
        yield* Effect.provide(migrate, PgClient.layer({ host: embedded.socketDir, username: "postgres", database: "postgres", maxConnections: 1 }))
        yield* write(path.join(work, "template.tar.gz"))
      })
    )
  )
  fs.mkdirSync(dir, { recursive: true })
  // Renames within one file system are atomic; across them, a copy is as good for a cache.
  for (const [from, to] of [["empty.tar.gz", emptyDumpFile], ["template.tar.gz", dumpFile]] as const) {
    fs.copyFileSync(path.join(work, from), `${to}.${process.pid}`)
    fs.renameSync(`${to}.${process.pid}`, to)
  }
  fs.rmSync(work, { recursive: true, force: true })
}
