/**
 * Prepared statements kept on each pooled connection, as the reference's driver keeps them
 * (asyncpg's statement cache, 100 a connection by default; `statement_cache_size` and
 * `prepared_statement_cache_size` of `server.database.sqlalchemy.connect_args`, 0 turning it off,
 * as PgBouncer in transaction mode needs).
 *
 * A statement with parameters is sent as a named statement: PostgreSQL parses it once a
 * connection, and after five executions plans it once for good when its generic plan costs no
 * more than the plans made for each execution. Parsing and planning are most of what PostgreSQL
 * spends on the server's short statements (the poll's statement alone takes longer to plan than to
 * run). Statements without parameters (`BEGIN`, several statements in one text) go unnamed, by the
 * simple protocol, as before, and so do very long ones (a batch of rows in one statement).
 *
 * Each connection keeps at most `size` statements, the least recently used one deallocated to make
 * room (outside a transaction); a connection running or waiting on something, or full in a
 * transaction, keeps the ones it has and sends the new statement unnamed. What PostgreSQL refuses
 * of a kept statement (gone from the session, prepared twice, its plan's columns changed by a
 * migration since) is put right for the next time, and the statement runs again unnamed when it was
 * not in a transaction (in one, the transaction has failed with it). A DEALLOCATE is sent only on
 * an idle connection outside a transaction, and what follows it waits for its answer, so no
 * statement is ever queued behind another on a connection.
 *
 * A kept statement's rows are described once a connection: node-postgres asks PostgreSQL to
 * describe the rows of every execution (a Describe message, answered by a description of each
 * column, parsed again each time: over forty columns for a run's row), where a prepared statement's
 * columns cannot change (PostgreSQL refuses to run it once its plan's columns changed, and it is
 * then prepared again). Its first execution on a connection keeps the description it was given;
 * the next ones are sent without a Describe and read their rows by that description.
 */
import { createHash } from "node:crypto"
import { createRequire } from "node:module"
import pg from "pg"

/** The statement cache's size when neither setting says: asyncpg's default. */
export const DEFAULT_STATEMENT_CACHE_SIZE = 100

/** The cache's size the two settings give: 0 if either is 0, else prepared_statement_cache_size, else statement_cache_size, else the default. */
export const statementCacheSize = (args: {
  readonly statement_cache_size: number | null
  readonly prepared_statement_cache_size: number | null
}): number => {
  const sizes = [args.prepared_statement_cache_size, args.statement_cache_size].filter((size): size is number => size !== null)
  if (sizes.some((size) => size <= 0)) return 0
  return sizes[0] ?? DEFAULT_STATEMENT_CACHE_SIZE
}

/** node-postgres's record of the statements a connection has prepared (by name, their texts). */
interface ConnectionRecord {
  readonly parsedStatements: Record<string, string>
  readonly submittedNamedStatements: Record<string, string>
}

interface ClientInternals {
  readonly connection: ConnectionRecord
  readonly _activeQuery?: unknown
  readonly _queryQueue?: ReadonlyArray<unknown>
  /** The transaction status of the last ReadyForQuery: "I" outside a transaction. */
  readonly _txStatus?: string | null
}

type Callback = (error: Error | null, result?: unknown) => void

/** What PostgreSQL answers a Describe with: its rows' columns (node-postgres's message). */
interface RowDescription {
  readonly fields: ReadonlyArray<unknown>
}

/** The parts of node-postgres's Query and connection that sending a statement without its Describe uses. */
interface QueryInternals {
  readonly name?: string
  readonly portal: string
  readonly values?: ReadonlyArray<unknown>
  readonly binary?: boolean
  readonly rows?: number
  handleRowDescription(message: RowDescription): void
  handleError(error: unknown, connection: unknown): void
  _getRows(connection: unknown, rows: number | undefined): void
}
interface ConnectionInternals {
  bind(config: object): void
  close(config: object): void
  sync(): void
}

/** node-postgres's conversion of a value for the wire (the one its own Query uses). */
const prepareValue = (createRequire(createRequire(import.meta.url).resolve("pg/lib/query.js"))("./utils.js") as {
  readonly prepareValue: (value: unknown) => unknown
}).prepareValue

/**
 * A kept statement, parsed on the connection already, whose rows are known: sent as node-postgres
 * sends it (Bind, Execute, Sync), without the Describe, and its rows read by `description` (null: it
 * returns none).
 */
class DescribedQuery extends pg.Query {
  constructor(text: string, values: ReadonlyArray<unknown>, callback: Callback, readonly description: RowDescription | null) {
    super(text, values as Array<unknown>, callback as never)
  }

  prepare(connection: ConnectionInternals) {
    const query = this as unknown as QueryInternals
    try {
      connection.bind({ portal: query.portal, statement: query.name, values: query.values, binary: query.binary, valueMapper: prepareValue })
    } catch (error) {
      // As node-postgres does when a value cannot be sent.
      connection.close({ type: "S", name: query.name })
      connection.sync()
      query.handleError(error, connection)
      return
    }
    if (this.description !== null) query.handleRowDescription(this.description)
    query._getRows(connection, query.rows)
  }
}

/** Statement names by text: one name for a text in every connection, the hash of the text. */
const names = new Map<string, string>()
/** Texts named at most; past it the map starts again (a name is only ever the hash of its text). */
const MAX_NAMES = 2_000

/**
 * Statements past these go unnamed: made for one request (a batch of rows written in one
 * statement), they would only push out the ones that come back, and hold the name map's memory.
 */
const MAX_TEXT_LENGTH = 16_384
const MAX_PARAMETERS = 1_000

const nameOf = (text: string): string => {
  let name = names.get(text)
  if (name === undefined) {
    if (names.size >= MAX_NAMES) names.clear()
    name = `baton_${createHash("sha1").update(text).digest("base64url")}`
    names.set(text, name)
  }
  return name
}

/** SQLSTATEs of a kept statement gone wrong: gone from the session, prepared already, its plan's columns changed. */
const MISSING = "26000"
const DUPLICATE = "42P05"
const PLAN_CHANGED = "0A000"

const sqlState = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null ? (error as { code?: string }).code : undefined

const installed = new WeakSet<pg.ClientBase>()

/**
 * Sends `client`'s statements with parameters as named statements, keeping at most `size` of them
 * prepared on its session. Installed once a connection (the pool's `connect` event).
 */
export const keepPreparedStatements = (client: pg.ClientBase, size: number): void => {
  if (size <= 0 || installed.has(client)) return
  installed.add(client)
  const internals = client as unknown as ClientInternals
  // The class's own method, looked up at each call (so what wraps it, instrumentation or a test, still runs).
  const prototype = Object.getPrototypeOf(client) as { query: (...args: Array<unknown>) => unknown }
  const send = (...args: Array<unknown>) => prototype.query.apply(client, args)
  /**
   * Sends `text`, as the statement `name` when one is given: a Query made from the text itself (and
   * named after), since node-postgres copies every query config object it is given (property
   * descriptors and all).
   */
  const sendStatement = (name: string | undefined, text: string, values: ReadonlyArray<unknown>, rowMode: unknown, callback: Callback) => {
    if (rowMode !== undefined) return send({ ...(name === undefined ? {} : { name }), text, values, rowMode }, callback)
    if (name === undefined) return prototype.query.call(client, new pg.Query(text, values as Array<unknown>, callback as never))
    const known = described.get(name)
    if (known !== undefined && internals.connection.parsedStatements[name] === text) {
      const query = new DescribedQuery(text, values, callback, known) as unknown as { name?: string }
      query.name = name
      return prototype.query.call(client, query)
    }
    // Its first execution here: the description it is given is kept once it has answered.
    let description: RowDescription | null = null
    const query = new pg.Query(text, values as Array<unknown>, ((error: Error | null, result?: unknown) => {
      if (error === null) described.set(name, description)
      callback(error, result)
    }) as never) as unknown as QueryInternals & { name?: string }
    query.name = name
    const handle = query.handleRowDescription
    query.handleRowDescription = function(this: QueryInternals, message: RowDescription) {
      description = message
      handle.call(this, message)
    }
    return prototype.query.call(client, query)
  }
  /** The names prepared on this session, least recently used first. */
  const kept = new Set<string>()
  /** The rows' description of each kept statement that has answered on this session (null: no rows). */
  const described = new Map<string, RowDescription | null>()
  /** Kept names PostgreSQL refused in a transaction: deallocated once outside one, sent unnamed till then. */
  const stale = new Set<string>()
  const busy = () => internals._activeQuery != null || (internals._queryQueue?.length ?? 0) > 0
  const outsideTransaction = () => internals._txStatus === "I"
  /** node-postgres told the statement is not on the session: it parses it again when next sent. */
  const unparsed = (name: string) => {
    described.delete(name)
    delete internals.connection.parsedStatements[name]
    delete internals.connection.submittedNamedStatements[name]
  }
  const forget = (name: string) => {
    kept.delete(name)
    stale.delete(name)
    unparsed(name)
  }
  /** Sends DEALLOCATE, then `next` (whatever its answer: a name already gone is gone). */
  const deallocate = (name: string, next: () => void) => {
    forget(name)
    send(`DEALLOCATE "${name}"`, () => next())
  }

  /**
   * The name to send `text` under and the name to deallocate first (to make room, or a refused
   * plan's own); no name: send it unnamed. A connection that is busy, or in a transaction (where a
   * failed one would fail the DEALLOCATE too), changes nothing it keeps.
   */
  const nameFor = (text: string): { readonly name: string; readonly drop?: string } | undefined => {
    const name = nameOf(text)
    const idle = !busy()
    const free = idle && outsideTransaction()
    if (stale.has(name)) return free ? { name, drop: name } : undefined
    if (kept.has(name)) {
      // The most recently used goes last.
      kept.delete(name)
      kept.add(name)
      return { name }
    }
    if (!idle) return undefined
    if (kept.size < size) {
      kept.add(name)
      return { name }
    }
    return free ? { name, drop: kept.values().next().value! } : undefined
  }

  const named = (
    choice: { readonly name: string; readonly drop?: string },
    text: string,
    values: ReadonlyArray<unknown>,
    rowMode: unknown,
    callback: Callback
  ) => {
    const { name, drop } = choice
    const run = () => {
      const outside = outsideTransaction()
      sendStatement(name, text, values, rowMode, (error: Error | null, result?: unknown) => {
        const state = error === null ? undefined : sqlState(error)
        // Run again unnamed, unless a transaction it was in failed with it.
        const again = () => (outside ? sendStatement(undefined, text, values, rowMode, callback) : callback(error, result))
        if (state === MISSING) {
          unparsed(name)
          return again()
        }
        if (state === DUPLICATE) {
          internals.connection.parsedStatements[name] = text
          return again()
        }
        if (state === PLAN_CHANGED && error!.message.includes("cached plan")) {
          if (outside) return deallocate(name, again)
          stale.add(name)
          return callback(error, result)
        }
        callback(error, result)
      })
    }
    if (drop === undefined) return run()
    // Kept from when the room is made (a refused plan's own name: deallocated, then prepared again).
    deallocate(drop, () => {
      kept.add(name)
      run()
    })
  }

  client.query = function(this: unknown, ...args: Array<unknown>) {
    const [first, second, third] = args
    let text: string | undefined
    let values: ReadonlyArray<unknown> | undefined
    let rowMode: unknown
    let callback: unknown
    if (typeof first === "string" && Array.isArray(second)) {
      text = first
      values = second
      callback = third
    } else if (
      typeof first === "object" && first !== null &&
      Object.keys(first).every((key) => key === "text" || key === "values" || key === "rowMode")
    ) {
      // As node-postgres reads (config, values?, callback?): values given apart replace the config's.
      const config = first as { text?: unknown; values?: unknown; rowMode?: unknown }
      const given = Array.isArray(second) ? second : config.values
      if (typeof config.text === "string" && Array.isArray(given)) {
        text = config.text
        values = given
        rowMode = config.rowMode
        callback = typeof second === "function" ? second : third
      }
    }
    const choice = text !== undefined && values !== undefined && values.length > 0 &&
        text.length <= MAX_TEXT_LENGTH && values.length <= MAX_PARAMETERS &&
        (callback === undefined || typeof callback === "function")
      ? nameFor(text)
      : undefined
    if (choice === undefined) return send(...args)
    if (callback !== undefined) return void named(choice, text!, values!, rowMode, callback as Callback)
    return new Promise((resolve, reject) =>
      named(choice, text!, values!, rowMode, (error, result) => (error === null ? resolve(result) : reject(error)))
    )
  } as typeof client.query
}
