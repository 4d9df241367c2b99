/**
 * Backing up and restoring a PostgreSQL database with the PostgreSQL client programs found on PATH:
 * pg_dump's custom format (`-Fc`), a consistent snapshot taken while servers keep running, and
 * pg_restore into the database in one transaction, so a restore that fails changes nothing. A
 * database that holds Baton's tables already is replaced only with `force` (pg_restore's
 * `--clean --if-exists`: each object of the backup is dropped, then made again).
 */
import { SqlClient } from "@effect/sql"
import { Command } from "@effect/platform"
import { Effect, Stream } from "effect"
import type { SettingsValue } from "../settings/settings.ts"
import { BackupError, formatSize, writeAtomically } from "./backup-file.ts"
import { describeDatabase, layerServer, serverUrl } from "./client.ts"
import { MIGRATIONS_TABLE } from "./migrator.ts"

/**
 * How the client programs reach the database: the URL the server uses, without its password (it goes
 * in PGPASSWORD, out of the process list) and without the pool's connection options (a statement
 * timeout would cut a long dump short), and the TLS settings as libpq's variables.
 */
const toolConnection = (settings: SettingsValue) => {
  const db = settings.server.database
  const url = new URL(serverUrl(db))
  const env: Record<string, string> = {}
  if (url.password !== "") env.PGPASSWORD = decodeURIComponent(url.password)
  url.password = ""
  url.searchParams.delete("options")
  // asyncpg's spelling, which the server accepts too (tls.ts); libpq knows only sslmode.
  const ssl = url.searchParams.get("ssl")
  url.searchParams.delete("ssl")
  if (ssl !== null && !url.searchParams.has("sslmode")) url.searchParams.set("sslmode", ssl)
  const tls = db.sqlalchemy.connect_args.tls
  // As the server reads them (tls.ts): enabled verifies, the host name too unless check_hostname is off.
  if (tls.enabled && !url.searchParams.has("sslmode") && !url.searchParams.has("ssl")) env.PGSSLMODE = tls.check_hostname ? "verify-full" : "verify-ca"
  if (tls.ca_file !== null) env.PGSSLROOTCERT = tls.ca_file
  if (tls.cert_file !== null) env.PGSSLCERT = tls.cert_file
  if (tls.key_file !== null) env.PGSSLKEY = tls.key_file
  return { url: url.toString(), env }
}

interface ToolRun {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

/** What the database tells about itself before a backup or a restore. */
interface Target {
  readonly version: string
  /** Whether Baton's migrations table is on the search path. */
  readonly baton: boolean
  /** The tables of the schema Baton's tables are made in (the first of the search path). */
  readonly schema: string
  readonly tables: ReadonlyArray<string>
}

const inspect = (settings: SettingsValue) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [about] = yield* sql<{ version: string; baton: boolean; schema: string }>`
      SELECT current_setting('server_version') AS version,
             to_regclass(${MIGRATIONS_TABLE}) IS NOT NULL AS baton,
             current_schema() AS schema
    `
    const tables = yield* sql<{ tablename: string }>`
      SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename
    `
    // "15.20 (Debian 15.20-0+deb12u1)" says 15.20.
    const version = /^[\d.]+/.exec(about!.version)?.[0] ?? about!.version
    return { ...about!, version, tables: tables.map((t) => t.tablename) } satisfies Target
  }).pipe(
    Effect.provide(layerServer(settings)),
    Effect.scoped,
    Effect.mapError((error) => new BackupError({ message: error.message }))
  )

const major = (version: string) => /^\d+/.exec(version)?.[0] ?? version

/** The last lines of a program's complaint, enough to say why. */
const tail = (text: string) => text.trim().split("\n").slice(-12).join("\n")

/** Runs `program` (from PATH); says which package brings it when it is not there. */
const runTool = (program: string, args: ReadonlyArray<string>, env: Record<string, string>, serverVersion: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const child = yield* Command.start(Command.make(program, ...args).pipe(Command.env(env)))
      const text = <E>(stream: Stream.Stream<Uint8Array, E>) => stream.pipe(Stream.decodeText(), Stream.mkString)
      const [exitCode, stdout, stderr] = yield* Effect.all([child.exitCode, text(child.stdout), text(child.stderr)], {
        concurrency: "unbounded"
      })
      return { exitCode, stdout, stderr } satisfies ToolRun
    })
  ).pipe(
    Effect.mapError((error) =>
      new BackupError({
        message: error._tag === "SystemError" && error.reason === "NotFound"
          ? `${program} was not found on PATH. PostgreSQL ${serverVersion} needs ${program} ${major(serverVersion)} or newer: install PostgreSQL's client programs of that version (on Debian and Ubuntu, postgresql-client-${major(serverVersion)}) and put them on PATH.`
          : `Cannot run ${program}: ${String(error)}`
      })
    )
  )

/** The version a client program reports (`pg_dump (PostgreSQL) 15.20 …` gives 15.20). */
const toolVersion = (program: string, serverVersion: string) =>
  Effect.map(runTool(program, ["--version"], {}, serverVersion), (run) => /\d+(\.\d+)*/.exec(run.stdout)?.[0] ?? "of unknown version")

/** Writes the database to `file` in pg_dump's custom format. */
export const backup = (settings: SettingsValue, file: string) =>
  Effect.gen(function* () {
    const where = describeDatabase(settings)
    const target = yield* inspect(settings)
    if (!target.baton) {
      return yield* new BackupError({
        message: `${where} has no Baton tables to back up (no ${MIGRATIONS_TABLE} on its search path): is server.database.connection_url the database Baton uses?`
      })
    }
    const version = yield* toolVersion("pg_dump", target.version)
    const connection = toolConnection(settings)
    const size = yield* writeAtomically(file, (partial) =>
      Effect.flatMap(
        runTool("pg_dump", ["--format=custom", `--file=${partial}`, `--dbname=${connection.url}`], connection.env, target.version),
        (run) => {
          if (run.exitCode === 0) return Effect.void
          return Effect.fail(
            new BackupError({
              message: /server version mismatch/.test(run.stderr)
                ? `pg_dump ${version} cannot back up PostgreSQL ${target.version}: a backup needs pg_dump ${major(target.version)} or newer (PostgreSQL's client programs of the server's version) first on PATH.\n${tail(run.stderr)}`
                : `pg_dump failed:\n${tail(run.stderr)}`
            })
          )
        }
      ))
    return `Backed up ${where} to ${file} (${formatSize(size)}, pg_dump ${version}).`
  })

/** The tables of `schema` an archive holds, from its table of contents (`pg_restore --list`). */
const archiveTables = (listing: string, schema: string) =>
  new Set(
    listing.split("\n").flatMap((line) => {
      const entry = /^\d+; \d+ \d+ TABLE (\S+) (\S+) /.exec(line)
      return entry !== null && entry[1] === schema ? [entry[2]!] : []
    })
  )

/** pg_restore's complaint, with what to do where it is one Baton knows. */
const restoreFailed = (file: string, version: string, stderr: string) =>
  new BackupError({
    message: /unsupported version \([\d.]+\) in file header/.test(stderr)
      ? `${file} was written by a newer pg_dump than pg_restore ${version} reads: restore it with pg_restore of at least the version that wrote it. Nothing was changed.\n${tail(stderr)}`
      : `pg_restore failed; nothing was changed (the restore runs in one transaction):\n${tail(stderr)}`
  })

/**
 * Restores `file` into the database in one transaction. A database holding Baton's tables is
 * replaced only with `force`, and not even then when it has tables the backup has not (made by a
 * newer Baton's migrations, say): left behind, they would trip the next start's migrations.
 */
export const restore = (settings: SettingsValue, file: string, force: boolean) =>
  Effect.gen(function* () {
    const where = describeDatabase(settings)
    const target = yield* inspect(settings)
    const version = yield* toolVersion("pg_restore", target.version)
    if (target.baton && !force) {
      return yield* new BackupError({
        message: `${where} already holds Baton's tables, and restoring ${file} replaces them. Stop every Baton server using it, then run again with --force.`
      })
    }
    const connection = toolConnection(settings)
    if (target.baton) {
      const listing = yield* runTool("pg_restore", ["--list", file], connection.env, target.version)
      if (listing.exitCode !== 0) return yield* restoreFailed(file, version, listing.stderr)
      const inBackup = archiveTables(listing.stdout, target.schema)
      const extra = target.tables.filter((table) => !inBackup.has(table))
      if (extra.length > 0) {
        return yield* new BackupError({
          message: `${where} has tables that ${file} has not (${extra.join(", ")}; made by a newer Baton?). A restore would leave them behind, and the next start's migrations would trip on them. Restore into an empty database instead (point server.database.connection_url at it), or drop those tables first. Nothing was changed.`
        })
      }
    }
    const run = yield* runTool(
      "pg_restore",
      [
        `--dbname=${connection.url}`,
        "--single-transaction",
        // The objects belong to whoever restores them, as they did to whoever made them.
        "--no-owner",
        "--no-privileges",
        ...(target.baton ? ["--clean", "--if-exists"] : []),
        file
      ],
      connection.env,
      target.version
    )
    if (run.exitCode !== 0) return yield* restoreFailed(file, version, run.stderr)
    return `Restored ${file} into ${where}.`
  })
