/** What a failed statement means, for the callers that answer it. */
import type { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"

/** The statement broke a unique constraint (PostgreSQL's unique_violation). */
export const isUniqueViolation = (error: unknown) => (error as { cause?: { code?: string } })?.cause?.code === "23505"

/** The statement broke a unique or a foreign key constraint: what the reference answers 409 for. */
export const isIntegrityViolation = (error: unknown) => {
  const code = (error as { cause?: { code?: string } })?.cause?.code
  return code === "23505" || code === "23503"
}

/**
 * The statement refused a value it was given (SQLSTATE class 22, "data exception": a number out of
 * its column's range, a NUL character, a date PostgreSQL cannot represent, an invalid pattern …).
 */
export const isDataException = (error: unknown) => {
  const code = (error as { cause?: { code?: unknown } })?.cause?.code
  return typeof code === "string" && code.startsWith("22")
}

/** The message PostgreSQL gave for a failed statement, when there is one. */
export const databaseMessage = (error: unknown): string | undefined => {
  const message = (error as { cause?: { message?: unknown } })?.cause?.message
  return typeof message === "string" ? message : undefined
}

/**
 * `effect` in one transaction; a failure of the transaction itself (begin, commit) is a defect,
 * as every other statement failure is to the handlers.
 */
export const inTransaction = <A, E, R>(sql: SqlClient.SqlClient, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  sql.withTransaction(effect).pipe(
    Effect.catchAll((error) => (error instanceof SqlError ? Effect.die(error) : Effect.fail(error as E)))
  )
