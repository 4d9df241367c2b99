/**
 * Migrations: the numbered files in ./migrations, applied by @effect/sql's Migrator inside one
 * transaction that first takes a PostgreSQL advisory lock, so two servers starting at once on one
 * database never both migrate (the second waits, then finds nothing to do).
 */
import { Migrator, SqlClient } from "@effect/sql"
import { Effect, Layer, Schema } from "effect"
import { Settings } from "../settings/settings.ts"
import { migrations } from "./migrations/index.ts"

/** Any constant would do; this one spells "baton". */
const MIGRATION_LOCK = 0x6261746f6e

export const MIGRATIONS_TABLE = "baton_migrations"

export class MigrationError extends Schema.TaggedError<MigrationError>()("MigrationError", {
  message: Schema.String
}) {}

/** The error's message and, for a failed statement, what the database said. */
const describeError = (error: { readonly message: string; readonly cause?: unknown }): string => {
  const cause = error.cause as { message?: string } | undefined
  return cause?.message && cause.message !== error.message ? `${error.message}: ${cause.message}` : error.message
}

const run = Migrator.make({})({
  loader: Migrator.fromRecord(migrations),
  table: MIGRATIONS_TABLE
})

/** Applies pending migrations; returns the ones applied, as [id, name]. */
export const migrate = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      yield* sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK}::bigint)`
      // The Migrator probes for its table with a statement that would abort this transaction when
      // the table is missing: create it first, in the Migrator's own shape.
      yield* sql`
        CREATE TABLE IF NOT EXISTS ${sql(MIGRATIONS_TABLE)} (
          migration_id integer PRIMARY KEY,
          created_at timestamptz NOT NULL DEFAULT now(),
          name text NOT NULL
        )
      `
      return yield* run
    })
  )
}).pipe(
  Effect.mapError((error) => new MigrationError({ message: `Migration failed: ${describeError(error)}` })),
  Effect.withSpan("Migrator.migrate")
)

/** Drops every table of the public schema (all of Baton's data), then migrates from empty. */
export const reset = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.withTransaction(
    Effect.gen(function* () {
      yield* sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK}::bigint)`
      const tables = yield* sql<{ tablename: string }>`
        SELECT tablename FROM pg_tables WHERE schemaname = current_schema()
      `
      for (const { tablename } of tables) yield* sql`DROP TABLE IF EXISTS ${sql(tablename)} CASCADE`
    })
  )
  return yield* migrate
}).pipe(Effect.mapError((error) => new MigrationError({ message: `Reset failed: ${describeError(error)}` })))

/** Runs `migrate` at start when `server.database.migrate_on_start` is true. */
export const MigrateOnStart = Layer.effectDiscard(
  Effect.gen(function* () {
    const settings = yield* Settings
    if (!settings.server.database.migrate_on_start) return
    const applied = yield* migrate
    if (applied.length > 0) yield* Effect.logInfo(`Applied ${applied.length} migration(s)`)
  })
)
