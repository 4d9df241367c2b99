/**
 * What happens to every SQL statement just before it is sent: it is compiled (once: the compiled
 * text is kept for the execution that follows), refused when it needs more parameters than
 * PostgreSQL's protocol can carry, and logged when `server.database.echo` asks.
 *
 * PostgreSQL's wire protocol counts a statement's parameters in 16 bits. node-postgres sends a
 * larger count truncated, so the server reads a different number and answers a protocol violation
 * (SQLSTATE 08P01, "bind message has N parameter formats but 0 parameters"), which reads as a lost
 * connection: a filter with 70,000 values was answered 503 "database unavailable", and clients
 * retried it. Refused here, such a statement never reaches the database; a request answers 422.
 */
import { Statement } from "@effect/sql"
import { Data, Effect, Layer, Logger, LogLevel } from "effect"
import { Settings } from "../settings/settings.ts"

/** The most parameters one statement can carry (a 16-bit count). */
export const MAX_STATEMENT_PARAMETERS = 65_535

/** A statement that would need more than MAX_STATEMENT_PARAMETERS parameters: never sent. */
export class TooManyParameters extends Data.TaggedError("TooManyParameters")<{ readonly count: number }> {
  override get message() {
    return `The statement needs ${this.count} parameters; PostgreSQL takes at most ${MAX_STATEMENT_PARAMETERS}.`
  }
}

export const isTooManyParameters = (error: unknown): error is TooManyParameters =>
  error instanceof TooManyParameters

/** The longest statement text echoed whole; longer ones are cut, saying how much was left out. */
export const ECHO_MAX_CHARACTERS = 4_000

const echoed = (text: string) =>
  text.length <= ECHO_MAX_CHARACTERS ? text : `${text.slice(0, ECHO_MAX_CHARACTERS)}… (${text.length - ECHO_MAX_CHARACTERS} more characters)`

/**
 * Echoed statements are logged at INFO whatever `server.logging_level` says, as the reference's
 * echo writes them to a handler of its own. Their text only: the parameters hold request values
 * (a request body is never logged).
 */
const echo = (text: string, parameters: number) =>
  Effect.logInfo(`SQL: ${echoed(text)}`).pipe(
    Effect.annotateLogs({ parameters }),
    Logger.withMinimumLogLevel(LogLevel.Info)
  )

/** The check (and echo) of one statement: the statement to send, or a TooManyParameters defect. */
export const checkStatement = <A>(statement: Statement.Statement<A>, options: { readonly echo: boolean }) =>
  Effect.suspend(() => {
    const [text, parameters] = statement.compile()
    if (parameters.length > MAX_STATEMENT_PARAMETERS) return Effect.die(new TooManyParameters({ count: parameters.length }))
    return options.echo ? Effect.as(echo(text, parameters.length), statement) : Effect.succeed(statement)
  })

/**
 * The transformer for the fibers built under this Layer (a FiberRef, as a Logger is): the request
 * handlers and the background services get it by being built with it provided.
 */
export const StatementsLive = Layer.unwrapEffect(
  Effect.map(Settings, (settings) => {
    const options = { echo: settings.server.database.echo }
    return Statement.setTransformer((statement) => checkStatement(statement, options))
  })
)
