/**
 * `baton database backup FILE` and `baton database restore FILE`, for the database the settings
 * choose. Each kind of database is backed up in its own format (backup-file.ts): the embedded one
 * with the server stopped (backup-embedded.ts), PostgreSQL with pg_dump and pg_restore while servers
 * run (backup-postgres.ts). A backup restores into the same kind of database; the other kind is
 * refused, naming both.
 */
import { Effect } from "effect"
import * as path from "node:path"
import { Settings } from "../settings/settings.ts"
import { kindOf, wrongKind } from "./backup-file.ts"
import * as Postgres from "./backup-postgres.ts"
import { usesServer } from "./client.ts"

export { BackupError } from "./backup-file.ts"

// PGlite is loaded only for the embedded database, as client.ts does.
const embedded = Effect.promise(() => import("./backup-embedded.ts"))

/** Writes the database to `file`; succeeds with what was done, in a sentence. */
export const backup = (file: string) =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const target = path.resolve(file)
    if (usesServer(settings.server.database)) return yield* Postgres.backup(settings, target)
    return yield* Effect.flatMap(embedded, (Embedded) => Embedded.backup(settings, target))
  })

/** Restores `file` into the database (replacing Baton's data only with `force`); succeeds with what was done. */
export const restore = (file: string, options: { readonly force: boolean }) =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const source = path.resolve(file)
    const kind = yield* kindOf(source)
    if (usesServer(settings.server.database)) {
      if (kind._tag !== "PostgreSQL") return yield* wrongKind(source, kind)
      return yield* Postgres.restore(settings, source, options.force)
    }
    if (kind._tag !== "Embedded") return yield* wrongKind(source, kind)
    return yield* Effect.flatMap(embedded, (Embedded) => Embedded.restore(settings, source, kind, options.force))
  })
