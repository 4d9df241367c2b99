/**
 * Backing up and restoring the embedded database. PGlite serves one process, and a running server
 * owns its only instance, so both need the server stopped: they take the data directory's lock as a
 * server does, and refuse, saying so, while a server holds it. A backup is PGlite's dump of the data
 * directory (`dumpDataDir`), made with nothing else running on it; a restore loads a backup into a
 * new directory beside the current one and swaps the two only once it loaded, so a restore that fails
 * leaves the database as it was.
 */
import { DateTime, Effect } from "effect"
import * as fs from "node:fs"
import type { SettingsValue } from "../settings/settings.ts"
import { BackupError, type BackupKind, formatSize, writeAtomically } from "./backup-file.ts"
import { embeddedDataDir } from "./client.ts"
import { type EmbeddedDatabaseError, ensureDir, lockDataDir, openPGlite } from "./embedded.ts"
import { MIGRATIONS_TABLE } from "./migrator.ts"

const inUse = (dataDir: string, doing: string) => (error: EmbeddedDatabaseError) =>
  new BackupError({
    message: error.heldBy === undefined
      ? error.message
      : `The embedded database in ${dataDir} is in use by process ${error.heldBy} (a running Baton server). PGlite serves one process at a time, so ${doing} needs that server stopped: stop it, run this command again, then start the server again.`
  })

const failed = (what: string) => (cause: unknown) =>
  new BackupError({ message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}` })

const asBackupError = (error: { readonly message: string }) => new BackupError({ message: error.message })

/** Whether `dir` holds a PostgreSQL data directory. */
const holdsDatabase = (dir: string) => fs.existsSync(`${dir}/PG_VERSION`)

/** Writes the embedded database to `file` as PGlite's dump of its data directory. */
export const backup = (settings: SettingsValue, file: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const dataDir = embeddedDataDir(settings)
      if (!holdsDatabase(dataDir)) {
        return yield* new BackupError({ message: `There is no embedded database in ${dataDir} to back up.` })
      }
      yield* lockDataDir(dataDir).pipe(Effect.mapError(inUse(dataDir, "a consistent backup")))
      const db = yield* openPGlite({ dataDir }).pipe(Effect.mapError(asBackupError))
      const dump = yield* Effect.tryPromise({
        try: async () => {
          // Written out first, so that a restore starts without replaying the write-ahead log.
          await db.exec("CHECKPOINT")
          return Buffer.from(await (await db.dumpDataDir("gzip")).arrayBuffer())
        },
        catch: failed(`Cannot back up the embedded database in ${dataDir}`)
      })
      const size = yield* writeAtomically(file, (partial) =>
        Effect.try({ try: () => fs.writeFileSync(partial, dump), catch: failed(`Cannot write ${file}`) }))
      return `Backed up the embedded database in ${dataDir} to ${file} (${formatSize(size)}).`
    })
  )

/**
 * Loads `file` into a new data directory and, once it loaded and holds Baton's tables, puts it in the
 * current one's place; the current one is kept beside it, renamed. A current database is replaced
 * only with `force`.
 */
export const restore = (settings: SettingsValue, file: string, kind: Extract<BackupKind, { _tag: "Embedded" }>, force: boolean) =>
  Effect.scoped(
    Effect.gen(function* () {
      const dataDir = embeddedDataDir(settings)
      yield* ensureDir(settings.home).pipe(Effect.mapError(asBackupError))
      yield* lockDataDir(dataDir).pipe(Effect.mapError(inUse(dataDir, "a restore")))
      const replacing = fs.existsSync(dataDir) && fs.readdirSync(dataDir).length > 0
      if (replacing && !force) {
        return yield* new BackupError({
          message: `The embedded database in ${dataDir} already exists, and restoring ${file} replaces it. Run again with --force to replace it (the current one is then kept beside it, renamed).`
        })
      }
      const backup = yield* Effect.try({ try: () => fs.readFileSync(file), catch: failed(`Cannot read ${file}`) })
      const fresh = `${dataDir}.restoring-${process.pid}`
      const removeFresh = Effect.sync(() => fs.rmSync(fresh, { recursive: true, force: true }))
      yield* removeFresh
      yield* Effect.scoped(
        Effect.gen(function* () {
          const db = yield* openPGlite({ dataDir: fresh, loadDataDir: new Blob([backup]) }).pipe(
            Effect.mapError((error) =>
              new BackupError({
                message: `Cannot load ${file} (${kind.postgres ? `a data directory of PostgreSQL ${kind.postgres}` : "a PostgreSQL data directory"}) into the embedded database; nothing was changed. ${error.message}`
              })
            )
          )
          const found = yield* Effect.tryPromise({
            try: () => db.query<{ baton: boolean }>(`SELECT to_regclass('${MIGRATIONS_TABLE}') IS NOT NULL AS baton`),
            catch: failed(`Cannot read ${file}`)
          })
          if (found.rows[0]?.baton !== true) {
            return yield* new BackupError({ message: `${file} holds a PostgreSQL data directory without Baton's tables; nothing was changed.` })
          }
        })
      ).pipe(Effect.onError(() => removeFresh))

      const stamp = DateTime.formatIso(yield* DateTime.now).replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z")
      const aside = `${dataDir}.replaced-${stamp}`
      yield* Effect.try({
        try: () => {
          if (replacing) fs.renameSync(dataDir, aside)
          else fs.rmSync(dataDir, { recursive: true, force: true })
          try {
            fs.renameSync(fresh, dataDir)
          } catch (error) {
            if (replacing) fs.renameSync(aside, dataDir)
            throw error
          }
        },
        catch: failed(`Cannot put the restored database in place of ${dataDir}`)
      }).pipe(Effect.onError(() => removeFresh))
      return replacing
        ? `Restored ${file} into the embedded database in ${dataDir}. The database it replaced is kept in ${aside}: delete it once you no longer need it.`
        : `Restored ${file} into the embedded database in ${dataDir}.`
    })
  )
