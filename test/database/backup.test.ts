/**
 * `baton database backup` and `baton database restore`, run as a user runs them (the bundle's
 * command line) against real server processes: flow runs with their states, logs and a block
 * document with a secret made through the API of one server, backed up, restored into a new place,
 * and read back the same through a server started there, the secret still decrypting. On the
 * embedded database (the embedded run) and on PostgreSQL (with TEST_DATABASE_URL and pg_dump on
 * PATH). The refusals: a running embedded server, a missing file, a file of the wrong kind or of no
 * kind, a database that already holds Baton's tables (without --force) or tables the backup lacks
 * (even with it), pg_dump missing from PATH.
 */
import { PGlite } from "@electric-sql/pglite"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { idOf } from "../support/api.ts"
import { onServer, scopedDatabase, seededHome } from "../support/database.ts"
import { BUNDLE, ensureBundle, ok, type ServerProcess, scopedEmptyHome, scopedServerProcess } from "../support/server-process.ts"
import type { Json } from "../support/server.ts"

interface CommandResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** `baton ARGS` from the bundle with BATON_HOME `home`, on `databaseUrl` (the embedded database without). */
const baton = (args: ReadonlyArray<string>, options: { home: string; databaseUrl?: string; env?: Record<string, string> }) =>
  Effect.promise(() =>
    new Promise<CommandResult>((resolve, reject) => {
      const env: Record<string, string> = { ...(process.env as Record<string, string>), BATON_HOME: options.home, ...options.env }
      delete env.BATON_SERVER_DATABASE_CONNECTION_URL
      if (options.databaseUrl !== undefined) env.BATON_SERVER_DATABASE_CONNECTION_URL = options.databaseUrl
      const child = spawn(process.execPath, [BUNDLE, ...args], { env, stdio: ["ignore", "pipe", "pipe"] })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (chunk) => (stdout += chunk))
      child.stderr.on("data", (chunk) => (stderr += chunk))
      child.once("error", reject)
      child.once("exit", (code) => resolve({ code, stdout, stderr }))
    })
  )

const env = { BATON_SERVER_SERVICES_LATE_RUNS_ENABLED: "false", BATON_SERVER_SERVICES_SCHEDULER_ENABLED: "false" }

const scopedTempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "baton-backup-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

interface Seeded {
  readonly runIds: ReadonlyArray<string>
  readonly blockDocumentId: string
}

/** A flow with a completed run and a scheduled one, logs of the first, and a block document with a secret. */
const seed = (server: ServerProcess) =>
  Effect.promise(async (): Promise<Seeded> => {
    const flow = await ok(server, "POST", "/flows/", { name: "backed-up" }, 201)
    const done = idOf(await ok(server, "POST", "/flow_runs/", { flow_id: idOf(flow), name: "done", parameters: { x: 1 }, tags: ["kept"] }, 201))
    for (const type of ["RUNNING", "COMPLETED"]) {
      const answer = await ok(server, "POST", `/flow_runs/${done}/set_state`, { state: { type } }, 201)
      expect(answer.status).toBe("ACCEPT")
    }
    const waiting = idOf(await ok(server, "POST", "/flow_runs/", {
      flow_id: idOf(flow),
      name: "waiting",
      state: { type: "SCHEDULED", state_details: { scheduled_time: "2999-01-01T00:00:00Z" } }
    }, 201))
    await ok(server, "POST", "/logs/", [1, 2, 3].map((i) => ({
      name: "backup.test",
      level: 20,
      message: `line ${i}`,
      timestamp: `2026-01-01T00:00:0${i}Z`,
      flow_run_id: done
    })), 201)
    const type = await ok(server, "POST", "/block_types/", { name: "Backup Credentials", slug: "backup-credentials" }, 201)
    const schema = await ok(server, "POST", "/block_schemas/", {
      block_type_id: idOf(type),
      capabilities: [],
      fields: {
        title: "BackupCredentials",
        type: "object",
        properties: { user: { type: "string" }, password: { type: "string", format: "password", writeOnly: true } },
        block_type_slug: "backup-credentials",
        secret_fields: ["password"],
        block_schema_references: {}
      }
    }, 201)
    const document = await ok(server, "POST", "/block_documents/", {
      name: "credentials",
      block_type_id: idOf(type),
      block_schema_id: idOf(schema),
      data: { user: "etl", password: "s3cret-value" }
    }, 201)
    return { runIds: [done, waiting], blockDocumentId: idOf(document) }
  })

/** What the API shows of the seeded objects. */
const snapshot = (server: ServerProcess, seeded: Seeded) =>
  Effect.promise(async () => {
    const runs: Array<Json> = []
    const states: Array<Json> = []
    for (const id of seeded.runIds) {
      runs.push(await ok(server, "GET", `/flow_runs/${id}`))
      states.push(await ok(server, "GET", `/flow_run_states/?flow_run_id=${id}`))
    }
    const logs = await ok(server, "POST", "/logs/filter", { logs: { flow_run_id: { any_: [seeded.runIds[0]] } }, sort: "TIMESTAMP_ASC" })
    const block = await ok(server, "GET", `/block_documents/${seeded.blockDocumentId}?include_secrets=true`)
    return { runs, states, logs, block }
  })

/** The seeded objects are all there: the snapshots compared are not empty ones. */
const expectSeeded = (shot: { runs: Array<Json>; states: Array<Json>; logs: Json; block: Json }) => {
  expect(shot.runs.map((run) => run.state_type)).toEqual(["COMPLETED", "SCHEDULED"])
  expect(shot.states.map((list) => list.length)).toEqual([3, 1])
  expect((shot.logs as ReadonlyArray<Json>).map((log) => log.message)).toEqual(["line 1", "line 2", "line 3"])
  expect(shot.block.data).toEqual({ user: "etl", password: "s3cret-value" })
}

describe.skipIf(onServer())("baton database backup and restore on the embedded database", () => {
  it.live("restores, into a new home, the runs, logs and block documents a server made; refuses while a server runs", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const home = yield* seededHome
      const file = path.join(yield* scopedTempDir, "baton.backup")

      const first = yield* scopedServerProcess({ home, env })
      const seeded = yield* seed(first)
      const before = yield* snapshot(first, seeded)
      expectSeeded(before)

      // The running server holds the database: no backup of it, with the reason.
      const refused = yield* baton(["database", "backup", file], { home })
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain(`in use by process ${first.pid}`)
      expect(refused.stderr).toContain("stop it")
      expect(fs.existsSync(file)).toBe(false)

      yield* Effect.promise(() => first.kill("SIGTERM"))
      const made = yield* baton(["database", "backup", file], { home })
      expect(made.code, made.stderr).toBe(0)
      expect(made.stdout).toContain(`to ${file}`)
      // It holds the block documents' key and every secret: its owner's only.
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)

      // Restored into a new home, a server there shows the same objects, the secret decrypted.
      const newHome = yield* scopedEmptyHome
      const restored = yield* baton(["database", "restore", file], { home: newHome })
      expect(restored.code, restored.stderr).toBe(0)
      const second = yield* scopedServerProcess({ home: newHome, env })
      expect(yield* snapshot(second, seeded)).toEqual(before)
      yield* Effect.promise(() => second.kill("SIGTERM"))

      // Over a database that exists: only with --force, never while a server runs on it.
      const again = yield* baton(["database", "restore", file], { home: newHome })
      expect(again.code).toBe(1)
      expect(again.stderr).toContain("--force")
      const third = yield* scopedServerProcess({ home, env })
      const live = yield* baton(["database", "restore", "--force", file], { home })
      expect(live.code).toBe(1)
      expect(live.stderr).toContain(`in use by process ${third.pid}`)
      expect(yield* snapshot(third, seeded)).toEqual(before)
      yield* Effect.promise(() => third.kill("SIGTERM"))

      const forced = yield* baton(["database", "restore", "--force", file], { home: newHome })
      expect(forced.code, forced.stderr).toBe(0)
      const kept = fs.readdirSync(newHome).filter((name) => name.startsWith("database.replaced-"))
      expect(kept).toHaveLength(1)
      expect(forced.stdout).toContain(path.join(newHome, kept[0]!))
    }).pipe(Effect.scoped), 180_000)

  it.live("refuses a missing file, a file of no kind and a PostgreSQL archive, changing nothing", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const home = yield* scopedEmptyHome
      const dir = yield* scopedTempDir
      const missing = yield* baton(["database", "restore", path.join(dir, "nothing-here")], { home })
      expect(missing.code).toBe(1)
      expect(missing.stderr).toContain(`${path.join(dir, "nothing-here")} does not exist`)

      const text = path.join(dir, "notes.txt")
      fs.writeFileSync(text, "not a backup\n")
      const none = yield* baton(["database", "restore", text], { home })
      expect(none.code).toBe(1)
      expect(none.stderr).toContain("is not a Baton backup")

      // pg_dump's custom format begins so.
      const archive = path.join(dir, "postgres.dump")
      fs.writeFileSync(archive, Buffer.concat([Buffer.from("PGDMP"), Buffer.alloc(64)]))
      const other = yield* baton(["database", "restore", archive], { home })
      expect(other.code).toBe(1)
      expect(other.stderr).toContain("is a backup of a PostgreSQL database")
      expect(fs.readdirSync(home)).toEqual([])

      const nothing = yield* baton(["database", "backup", path.join(dir, "empty.backup")], { home })
      expect(nothing.code).toBe(1)
      expect(nothing.stderr).toContain("There is no embedded database")
    }).pipe(Effect.scoped), 60_000)
})

const hasPgDump = () => spawnSync("pg_dump", ["--version"]).status === 0

describe.skipIf(!onServer() || !hasPgDump())("baton database backup and restore on PostgreSQL", () => {
  it.live("restores, into another database, the runs, logs and block documents a running server made", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const home = yield* scopedEmptyHome
      const file = path.join(yield* scopedTempDir, "baton.dump")
      const source = (yield* scopedDatabase({ migrated: false })).url!
      const target = (yield* scopedDatabase({ migrated: false })).url!

      const first = yield* scopedServerProcess({ home, databaseUrl: source, env })
      const seeded = yield* seed(first)
      const before = yield* snapshot(first, seeded)
      expectSeeded(before)

      // pg_dump takes a consistent snapshot while the server runs.
      const made = yield* baton(["database", "backup", file], { home, databaseUrl: source })
      expect(made.code, made.stderr).toBe(0)
      expect(fs.readFileSync(file).subarray(0, 5).toString()).toBe("PGDMP")
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)

      const restored = yield* baton(["database", "restore", file], { home, databaseUrl: target })
      expect(restored.code, restored.stderr).toBe(0)
      const second = yield* scopedServerProcess({ home, databaseUrl: target, env })
      expect(yield* snapshot(second, seeded)).toEqual(before)
      yield* Effect.promise(() => second.kill("SIGTERM"))

      // Over Baton's tables: only with --force.
      const again = yield* baton(["database", "restore", file], { home, databaseUrl: target })
      expect(again.code).toBe(1)
      expect(again.stderr).toContain("already holds Baton's tables")
      const forced = yield* baton(["database", "restore", "--force", file], { home, databaseUrl: target })
      expect(forced.code, forced.stderr).toBe(0)
      const third = yield* scopedServerProcess({ home, databaseUrl: target, env })
      expect(yield* snapshot(third, seeded)).toEqual(before)
      yield* Effect.promise(() => third.kill("SIGTERM"))

      // Not even with --force over a table the backup lacks (one a newer Baton made, say): --clean would leave it.
      yield* Effect.promise(async () => {
        const client = new pg.Client({ connectionString: target })
        await client.connect()
        try {
          await client.query("CREATE TABLE made_by_a_newer_baton (id int)")
        } finally {
          await client.end()
        }
      })
      const leftover = yield* baton(["database", "restore", "--force", file], { home, databaseUrl: target })
      expect(leftover.code).toBe(1)
      expect(leftover.stderr).toContain("has tables that")
      expect(leftover.stderr).toContain("made_by_a_newer_baton")
    }).pipe(Effect.scoped), 180_000)

  it.live("refuses a backup of the embedded database, and says so when pg_dump is not on PATH", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const home = yield* scopedEmptyHome
      const dir = yield* scopedTempDir
      const url = (yield* scopedDatabase({ migrated: true })).url!

      const embedded = path.join(dir, "embedded.backup")
      yield* Effect.promise(async () => {
        const db = await PGlite.create()
        try {
          fs.writeFileSync(embedded, Buffer.from(await (await db.dumpDataDir("gzip")).arrayBuffer()))
        } finally {
          await db.close()
        }
      })
      const other = yield* baton(["database", "restore", "--force", embedded], { home, databaseUrl: url })
      expect(other.code).toBe(1)
      expect(other.stderr).toContain("is a backup of the embedded database")

      // A PATH with no PostgreSQL programs on it (node is started by its full path).
      const noTools = yield* baton(["database", "backup", path.join(dir, "x.dump")], { home, databaseUrl: url, env: { PATH: dir } })
      expect(noTools.code).toBe(1)
      expect(noTools.stderr).toContain("pg_dump was not found on PATH")
      expect(fs.readdirSync(dir)).toEqual(["embedded.backup"])
    }).pipe(Effect.scoped), 60_000)
})
