/** What a failed statement means, for the callers that answer it. */
import type { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Either, Option, ParseResult } from "effect"
import { transaction } from "./transactions.ts"

/** The statement broke a unique constraint (PostgreSQL's unique_violation). */
export const isUniqueViolation = (error: unknown) => (error as { cause?: { code?: string } })?.cause?.code === "23505"

/** The statement named a row that does not exist (PostgreSQL's foreign_key_violation). */
export const isForeignKeyViolation = (error: unknown) => (error as { cause?: { code?: string } })?.cause?.code === "23503"

/** The statement broke a unique or a foreign key constraint: what the reference answers 409 for. */
export const isIntegrityViolation = (error: unknown) => {
  const code = (error as { cause?: { code?: string } })?.cause?.code
  return code === "23505" || code === "23503"
}

const codeOf = (error: unknown) => (error as { cause?: { code?: unknown } })?.cause?.code

/**
 * The statement refused a value it was given: SQLSTATE class 22, "data exception" (a number out of
 * its column's range, a NUL character, a date PostgreSQL cannot represent, an invalid pattern …), or
 * 54000, a value too large for its index (a name of hundreds of kilobytes).
 */
export const isDataException = (error: unknown) => {
  const code = codeOf(error)
  return typeof code === "string" && (code.startsWith("22") || code === "54000")
}

/** The message PostgreSQL gave for a refused value, when there is one worth showing a client. */
export const databaseMessage = (error: unknown): string | undefined => {
  // Its own words name the index; the client needs only to know which kind of problem it was.
  if (codeOf(error) === "54000") return "a value is too large to be stored"
  const message = (error as { cause?: { message?: unknown } })?.cause?.message
  return typeof message === "string" ? message : undefined
}

/**
 * `effect` in one transaction; a failure of the transaction itself (begin, commit), or of a statement
 * in it, is a defect, as every other statement failure is to the handlers. What it announces waits
 * for the commit (transactions.ts).
 */
export const inTransaction = <A, E, R>(
  sql: SqlClient.SqlClient,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, SqlError>, R> =>
  transaction(sql, effect).pipe(
    Effect.catchAll((error) => (error instanceof SqlError ? Effect.die(error) : Effect.fail(error as Exclude<E, SqlError>)))
  )

/**
 * Failures that say the database is away or cannot take the statement now, rather than that the
 * statement is wrong: a client should try again later (503), not report a bug (500).
 *
 * - the connection: refused, reset, timed out, a host that does not resolve, the embedded database's
 *   socket missing; node-postgres's and its pool's own words for a lost connection or an acquire
 *   timeout; PostgreSQL's connection exceptions (SQLSTATE class 08), admin or crash shutdown
 *   (57P01, 57P02), "the database system is starting up" (57P03), too many connections (53300);
 * - the moment: a statement cancelled by statement_timeout (57014), a serialization failure
 *   (40001), a deadlock (40P01), a lock not available (55P03).
 */
export type Unavailability = "unreachable" | "busy"

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ENOTFOUND",
  "EAI_AGAIN"
])

const SERVER_AWAY_CODES = new Set(["57P01", "57P02", "57P03", "53300"])

const BUSY_CODES = new Set(["57014", "40001", "40P01", "55P03"])

/** node-postgres (pg, pg-pool) report a lost connection or a pool that gave up with these words and no code. */
const LOST_CONNECTION = [
  "Connection terminated",
  "timeout exceeded when trying to connect",
  "timeout expired",
  "is not queryable",
  "Cannot use a pool after calling end on the pool",
  "Failed to acquire connection"
]

const classifyOne = (error: unknown): Unavailability | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const { code, message, syscall } = error as { code?: unknown; message?: unknown; syscall?: unknown }
  if (typeof code === "string") {
    if (NETWORK_CODES.has(code)) return "unreachable"
    // The embedded database's socket file is gone (its server stopped).
    if (code === "ENOENT" && syscall === "connect") return "unreachable"
    if (SERVER_AWAY_CODES.has(code) || (code.length === 5 && code.startsWith("08"))) return "unreachable"
    if (BUSY_CODES.has(code)) return "busy"
  }
  if (typeof message === "string" && LOST_CONNECTION.some((words) => message.includes(words))) return "unreachable"
  return undefined
}

/**
 * Whether `error` (a SqlError, a driver error, or anything wrapping one in `cause`) says the
 * database is unavailable, and how; undefined for every other failure.
 */
export const unavailability = (error: unknown): Unavailability | undefined => {
  let current: unknown = error
  // A SqlError wraps the driver's error, which may wrap the socket's (pg-pool's timeout does).
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const found = classifyOne(current)
    if (found !== undefined) return found
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

/** One line on why the database is unavailable, for logs: the innermost message, without a trace. */
export const unavailabilityReason = (error: unknown): string => {
  const messages: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const { message, code } = current as { message?: unknown; code?: unknown }
    if (typeof message === "string" && message !== "") {
      messages.push(typeof code === "string" && !message.includes(code) ? `${message} (${code})` : message)
    }
    current = (current as { cause?: unknown }).cause
  }
  return messages.join(": ")
}

/**
 * `effect` with the database's unavailability as a failure even where it arrives as a defect: a
 * transaction whose connection is lost fails its ROLLBACK (or COMMIT) too, which @effect/sql turns
 * into a defect, so a retry of the transaction would never see it. For idempotent writes that
 * retry.
 */
export const unavailabilityAsFailure = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  Effect.catchAllDefect(effect, (defect) =>
    unavailability(defect) !== undefined && defect instanceof SqlError ? Effect.fail(defect) : Effect.die(defect)
  )

/**
 * What a statement's reader fails with only through a bug: a statement that failed (SqlError), a row
 * its schema refused (ParseError), no row from a statement that always answers one
 * (NoSuchElementException, from `SqlSchema.single`).
 */
type StatementDefect = SqlError | ParseResult.ParseError | Cause.NoSuchElementException

const isStatementDefect = (error: unknown) =>
  error instanceof SqlError || ParseResult.isParseError(error) || Cause.isNoSuchElementException(error)

/** A repository method with its statement failures (StatementDefect) taken out of its error channel. */
export type WithoutSqlError<F> = F extends (...args: infer Args) => Effect.Effect<infer A, infer E, infer R>
  ? (...args: Args) => Effect.Effect<A, Exclude<E, StatementDefect>, R>
  : F

/** `effect` with its statement failures (StatementDefect) as defects; for a generic method sqlErrorsAsDefects cannot keep generic. */
export const sqlErrorAsDefect = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, StatementDefect>, R> =>
  Effect.catchIf(effect, (error): error is Extract<E, StatementDefect> => isStatementDefect(error), Effect.die) as Effect.Effect<
    A,
    Exclude<E, StatementDefect>,
    R
  >

/**
 * `repository` with every method's SqlError turned into a defect: a failed statement is a bug or
 * an unavailable database, which the Api middleware answers (500, 503, and 409 for an integrity
 * violation nothing more specific caught); a repository that gives a constraint violation a meaning
 * (a name taken, a reference to nothing) fails with its domain error before this. A row its schema
 * refuses (a read through SqlSchema) is a defect too: a bug, not a client's error.
 * The other failures of a method (its domain errors) are kept. Members that are not methods
 * returning an Effect are left as they are.
 */
export const sqlErrorsAsDefects = <T extends Record<string, unknown>>(
  repository: T
): { readonly [K in keyof T]: WithoutSqlError<T[K]> } => {
  const out: Record<string, unknown> = {}
  for (const [key, member] of Object.entries(repository)) {
    out[key] = typeof member === "function"
      ? (...args: Array<unknown>) => {
        const result = (member as (...args: Array<unknown>) => unknown)(...args)
        return Effect.isEffect(result) && !Option.isOption(result) && !Either.isEither(result)
          ? sqlErrorAsDefect(result)
          : result
      }
      : member
  }
  return out as { readonly [K in keyof T]: WithoutSqlError<T[K]> }
}
