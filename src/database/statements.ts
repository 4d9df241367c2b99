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
import { SqlClient, Statement } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Context, Data, Effect, FiberRef, Layer, Logger, LogLevel, Option } from "effect"
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
  Effect.map(Settings, (settings) =>
    Statement.setTransformer(settings.server.database.echo ? (statement) => checkStatement(statement, { echo: true }) : checkOnly)
  )
).pipe(Layer.merge(Layer.effectDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) => fastStatements(sql)))))

/** The transformer without the echo: the one a statement may skip (fastStatements). */
const checkOnly = <A>(statement: Statement.Statement<A>) => checkStatement(statement, { echo: false })

/** A statement as @effect/sql makes it: what its execution reads. */
interface StatementInternals {
  readonly acquirer: Effect.Effect<{
    readonly execute: (sql: string, params: ReadonlyArray<unknown>, transformRows: unknown) => Effect.Effect<unknown, unknown>
  }, unknown>
  readonly transformRows: unknown
  readonly segments: ReadonlyArray<{ readonly _tag: string; readonly value: unknown; readonly params?: ReadonlyArray<unknown> }>
  readonly compiler: object
  readonly compile: () => readonly [string, ReadonlyArray<unknown>]
  commit: () => Effect.Effect<unknown, unknown>
}

/**
 * Statements by shape: the texts of their literals and identifiers in order, and where their
 * parameters go. Two statements of one shape compile to the same text (PostgreSQL's placeholders
 * are numbered by position, whatever the values), so the text is compiled once per shape and then
 * reused, the same string each time: naming a prepared statement by its text (./prepared.ts) then
 * finds it without hashing a freshly built string of a kilobyte or more. Statements with anything
 * else in them (arrays, records, JSON values, literals with their own parameters) compile as usual.
 */
interface Shape {
  literals?: Map<string, Shape>
  identifiers?: Map<string, Shape>
  parameter?: Shape
  /** The compiled text of the statements of this shape. */
  text?: string
}

/** The shapes of each compiler's statements (a compiler is a client's dialect and its transforms). */
let shapes = new WeakMap<object, Shape>()
let shapesKept = 0
let charactersKept = 0
/**
 * Shapes, and characters of their literals and texts, kept at most before all are forgotten and
 * made afresh (literals can be made at run time: neither their number nor their length is Baton's).
 */
const MAX_SHAPES = 20_000
const MAX_SHAPE_CHARACTERS = 4_000_000
/** Statements of more segments (a filter of thousands of values) compile as usual, kept nowhere. */
const MAX_SHAPED_SEGMENTS = 1_000

const nextShape = (map: Map<string, Shape>, key: string): Shape => {
  let next = map.get(key)
  if (next === undefined) {
    next = {}
    map.set(key, next)
    shapesKept++
    charactersKept += key.length
  }
  return next
}

/** A statement's text and parameters, as `statement.compile()` gives them. */
export const compiled = (statement: StatementInternals): readonly [string, ReadonlyArray<unknown>] => {
  if (statement.segments.length > MAX_SHAPED_SEGMENTS) return statement.compile()
  if (shapesKept >= MAX_SHAPES || charactersKept >= MAX_SHAPE_CHARACTERS) {
    shapes = new WeakMap()
    shapesKept = 0
    charactersKept = 0
  }
  let shape = shapes.get(statement.compiler)
  if (shape === undefined) shapes.set(statement.compiler, shape = {})
  const parameters: Array<unknown> = []
  for (const segment of statement.segments) {
    switch (segment._tag) {
      case "Literal":
        if (segment.params !== undefined && segment.params.length > 0) return statement.compile()
        shape = nextShape(shape.literals ??= new Map(), segment.value as string)
        break
      case "Identifier":
        shape = nextShape(shape.identifiers ??= new Map(), segment.value as string)
        break
      case "Parameter":
        parameters.push(segment.value)
        if (shape.parameter === undefined) {
          shape.parameter = {}
          shapesKept++
        }
        shape = shape.parameter
        break
      default:
        return statement.compile()
    }
  }
  if (shape.text !== undefined) return [shape.text, parameters]
  const made = statement.compile()
  shape.text = made[0]
  charactersKept += made[0].length
  return made
}

const FAST = Symbol.for("baton/database/fastStatements")

/** A statement run on a pool of its own client's, outside a transaction: its rows (transformed when asked). */
export type PoolStatement = (
  text: string,
  values: ReadonlyArray<unknown>,
  transformRows: ((rows: ReadonlyArray<object>) => ReadonlyArray<object>) | undefined
) => Effect.Effect<ReadonlyArray<unknown>, SqlError>

/** The pool path of each client's statements outside a transaction, by the statements' acquirer (one per client). */
const poolPaths = new WeakMap<object, PoolStatement>()

/** Runs `sql`'s statements outside a transaction by `run` (in fastStatements' conditions). */
export const runOutsideTransactions = (sql: { (strings: TemplateStringsArray): unknown }, run: PoolStatement): void => {
  poolPaths.set((sql`SELECT 1` as unknown as StatementInternals).acquirer, run)
}

/**
 * Runs statements (`yield* sql\`…\``) without the span and the scope @effect/sql opens for each
 * one, when no span is made (tracing off, docs/tracing.md) and no echo is asked: checked as the
 * transformer checks them, compiled (once), and sent on the transaction's connection, or outside
 * one on the pool by the client's own pool path (runOutsideTransactions: without the per-checkout
 * view and cancel effect PgClient makes, 15 µs a statement) or as @effect/sql sends them. The span
 * and scope cost about 60 Effect operations a statement, more than the rest of its execution, and
 * a run's lifecycle makes twenty statements. With tracing or the echo on, or another transformer
 * set, statements run as @effect/sql runs them.
 *
 * Installed on @effect/sql's statement class (one per process) by StatementsLive.
 */
const fastStatements = (sql: { (strings: TemplateStringsArray): unknown }) =>
  Effect.sync(() => {
    const prototype = Object.getPrototypeOf(sql`SELECT 1`) as StatementInternals & { [FAST]?: true }
    if (prototype[FAST] === true) return
    const original = prototype.commit
    prototype.commit = function(this: StatementInternals) {
      return Effect.withFiberRuntime((fiber) => {
        const transform = fiber.getFiberRef(Statement.currentTransformer)
        if (fiber.getFiberRef(FiberRef.currentTracerEnabled) || (transform._tag === "Some" && transform.value !== checkOnly)) {
          return original.call(this)
        }
        const [text, parameters] = compiled(this)
        if (parameters.length > MAX_STATEMENT_PARAMETERS) return Effect.die(new TooManyParameters({ count: parameters.length }))
        const onPool = poolPaths.get(this.acquirer)
        if (onPool !== undefined && Option.isNone(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection))) {
          return onPool(text, parameters, this.transformRows as Parameters<PoolStatement>[2])
        }
        return Effect.flatMap(this.acquirer, (connection) => connection.execute(text, parameters, this.transformRows))
      })
    }
    prototype[FAST] = true
  })
