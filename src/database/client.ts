/**
 * The one database client: PostgreSQL through @effect/sql-pg, either a real server (when
 * `server.database.connection_url` or `host` is set) or the embedded one under `{home}/database`.
 */
import { SqlClient, SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Either, type Fiber, Layer, Redacted, Schema } from "effect"
import * as net from "node:net"
import * as path from "node:path"
import pg from "pg"
import { Settings, type SettingsValue, usesDatabaseServer } from "../settings/settings.ts"
import { installDriverRows, rowTypes } from "./driver-rows.ts"
import { type PoolStatement, runOutsideTransactions } from "./statements.ts"
import { DEFAULT_STATEMENT_CACHE_SIZE, keepPreparedStatements, statementCacheSize } from "./prepared.ts"
import { isCertificateRefused, serverTls, type ServerTls } from "./tls.ts"

export class DatabaseError extends Schema.TaggedError<DatabaseError>()("DatabaseError", {
  message: Schema.String
}) {}

type DatabaseSettings = SettingsValue["server"]["database"]

/** How the connection pool is used right now, read live (node-postgres counts it). */
export interface PoolUse {
  /** Connections open, in use or idle. */
  readonly totalCount: number
  readonly idleCount: number
  /** Requests waiting for a connection. */
  readonly waitingCount: number
}

/** The pool of the database client the Layers of this module make, with the most connections it opens. */
export class DatabasePool extends Context.Tag("baton/DatabasePool")<
  DatabasePool,
  { readonly use: PoolUse; readonly max: number }
>() {}

/**
 * How an interrupted statement is cancelled. PgClient cancels it with `SELECT pg_cancel_backend(pid)`
 * through the pool, waiting up to 5 s (on the fiber's Clock) for a pooled connection, while the
 * interrupted statement keeps its own connection until the cancel returns: with every connection
 * taken (always, on the embedded database's single one) each interruption (a client that went away
 * mid-statement, a service stopping) held the pool for 5 s, and for ever under a test's clock. Here
 * the cancel never waits for the pool: on a server it goes on a connection of its own
 * ("own-connection"); the embedded database runs one statement at a time on its one session, with
 * nothing to cancel it from, so it is skipped ("skip"): the statement ends by itself and the next
 * one waits behind it on the same connection.
 */
export type StatementCancel = "own-connection" | "skip"

const CANCEL_STATEMENT = /^SELECT pg_cancel_backend\((\d+)\)$/

/**
 * The most cancels a process has on their own connections at once: many clients going away together
 * must not open as many connections. Beyond it a statement is not cancelled and runs to its end
 * (within the statement timeout); its fiber still lets go at once.
 */
export const MAX_CANCELS_IN_FLIGHT = 4

/** node-postgres's own record of what a client is running (fields its pool reads too). */
interface ClientQueue {
  readonly _activeQuery?: unknown
  readonly _queryQueue?: ReadonlyArray<unknown>
}

const busy = (client: pg.PoolClient) => {
  const queue = client as unknown as ClientQueue
  return queue._activeQuery != null || (queue._queryQueue?.length ?? 0) > 0
}

/** The id of the server process behind a connection, once connected. */
const processIdOf = (client: pg.ClientBase): number | undefined => (client as { processID?: number }).processID

type Release = (error?: Error | boolean) => void
type ConnectCallback = (error: Error | undefined, client: pg.PoolClient | undefined, release: Release) => void

/**
 * What happens around each time the pool hands out a connection (a checkout): which statement a
 * cancel is for, and when the connection may go back.
 *
 * A cancel reaches only the statement it was asked for. PgClient sends an interrupted statement's
 * cancel (`pg_cancel_backend(pid)`) even when the statement's answer came in first: the answer's
 * callback has then given the connection back, the pool may have handed it to another request, and
 * the cancel stopped that request's statement (its client got a 503). So each checkout is handed
 * out as a view of the connection whose `processID` is a ticket of that checkout: PgClient's cancel
 * names the ticket, and is sent to the real process only while that checkout lasts. A cancel that
 * is sent holds the connection until it returns (PostgreSQL ignores a cancel that finds its session
 * idle), so an answer arriving meanwhile does not hand the connection on early.
 *
 * A connection goes back to the pool only once its statement has ended. PgClient gives back an
 * interrupted statement's connection as soon as the cancel returns, while the statement may still
 * run (its cancel arriving a moment later, or skipped: see StatementCancel); handed out at once, the
 * next statement was queued behind it by node-postgres (its "client.query() when the client is
 * already executing a query" deprecation, an error from pg 9 on) and waited there anyway. Here the
 * connection is given back once node-postgres says it is idle ("drain") and no cancel is on its way
 * to it, or once it ends.
 *
 * The cancel itself never waits for the pool: on a server it goes on a connection of its own, at
 * most MAX_CANCELS_IN_FLIGHT at once; on the embedded database it is skipped (StatementCancel).
 *
 * Gives the pool path: how a statement outside a transaction runs when no span is made
 * (database/statements.ts), by the same tickets, without a view of the connection.
 */
const guardCheckouts = (pool: pg.Pool, cancel: StatementCancel): PoolStatement => {
  /** The process id behind each checkout that has not ended, by its ticket. */
  const open = new Map<number, number>()
  let lastTicket = 0
  /**
   * Cancels on their way, by the process id they go to, and the release waiting for them to return
   * (one at most: a connection is in one checkout at a time).
   */
  const cancelling = new Map<number, number>()
  const cancelReturned = new Map<number, () => void>()
  let inFlight = 0

  /** Gives `client` back with `release` once it runs nothing and no cancel is on its way to it. */
  const releaseWhenIdle = (client: pg.PoolClient, release: Release, error?: Error | boolean) => {
    const processId = processIdOf(client)
    const idle = () => !busy(client) && (processId === undefined || !cancelling.has(processId))
    if (error || idle()) return release(error)
    const settle = (ended: boolean) => {
      client.off("drain", check)
      client.off("end", endedEarly)
      client.off("error", ignore)
      if (processId !== undefined) cancelReturned.delete(processId)
      release(ended ? new Error("The connection ended while its statement ran") : undefined)
    }
    const check = () => idle() && settle(false)
    const endedEarly = () => settle(true)
    // Its statement's own error goes to that statement; a lost connection ends it ("end").
    const ignore = () => {}
    client.on("drain", check)
    client.on("end", endedEarly)
    client.on("error", ignore)
    if (processId !== undefined) cancelReturned.set(processId, check)
  }

  /** Each connection's methods bound to it, made once (a statement reads several). */
  const boundMethods = new WeakMap<pg.PoolClient, Map<PropertyKey, { readonly method: Function; readonly bound: Function }>>()
  const boundTo = (client: pg.PoolClient, key: PropertyKey, method: Function) => {
    let methods = boundMethods.get(client)
    if (methods === undefined) boundMethods.set(client, methods = new Map())
    const known = methods.get(key)
    // Bound again when the method itself changed (replaced on the client or its class).
    if (known !== undefined && known.method === method) return known.bound
    const bound = method.bind(client)
    methods.set(key, { method, bound })
    return bound
  }

  /** The connection as one checkout sees it: its ticket for `processID`, its own `release`. */
  const checkoutView = (client: pg.PoolClient, ticket: number, release: Release): pg.PoolClient =>
    new Proxy(client, {
      get: (target, key) => {
        if (key === "processID") return ticket
        if (key === "release") return release
        const value: unknown = Reflect.get(target, key)
        return typeof value === "function" ? boundTo(target, key, value) : value
      }
    })

  const connect = pool.connect.bind(pool) as (callback: ConnectCallback) => void
  const checkOut = (callback: ConnectCallback) =>
    connect((error, client, poolRelease) => {
      if (client === undefined) return callback(error, client, poolRelease)
      const ticket = ++lastTicket
      const processId = processIdOf(client)
      if (processId !== undefined) open.set(ticket, processId)
      let given = false
      const release: Release = (releaseError) => {
        // As the pool itself refuses it (a second release may still be waiting for the first).
        if (given) throw new Error("Release called on client which has already been released to the pool.")
        given = true
        open.delete(ticket)
        releaseWhenIdle(client, poolRelease, releaseError)
      }
      callback(error, checkoutView(client, ticket, release), release)
    })
  pool.connect = ((callback?: ConnectCallback) => {
    if (callback !== undefined) return checkOut(callback)
    return new Promise<pg.PoolClient>((resolve, reject) =>
      checkOut((error, client) => (error !== undefined || client === undefined ? reject(error) : resolve(client)))
    )
  }) as typeof pool.connect

  const query = pool.query.bind(pool) as (...args: Array<unknown>) => unknown
  pool.query = ((...args: Array<unknown>) => {
    const [text, done] = args
    const ticket = typeof text === "string" && typeof done === "function" ? CANCEL_STATEMENT.exec(text) : null
    if (ticket === null) return query(...args)
    const answer = done as (error: unknown) => void
    const processId = open.get(Number(ticket[1]))
    // Its checkout ended (the statement answered first): the connection may be another's by now.
    if (processId === undefined || cancel === "skip" || inFlight >= MAX_CANCELS_IN_FLIGHT) return void answer(null)
    inFlight++
    cancelling.set(processId, (cancelling.get(processId) ?? 0) + 1)
    const client = new pg.Client(pool.options)
    client.on("error", () => {})
    client.connect()
      .then(() => client.query(`SELECT pg_cancel_backend(${processId})`))
      .then(() => answer(null), (error: unknown) => answer(error))
      .finally(() => {
        inFlight--
        const left = (cancelling.get(processId) ?? 1) - 1
        if (left > 0) cancelling.set(processId, left)
        else cancelling.delete(processId)
        cancelReturned.get(processId)?.()
        client.end().catch(() => {})
      })
  }) as typeof pool.query

  /**
   * The statements of each fiber that wait for their answer: one, or more when the fiber, interrupted
   * while one waited, runs another as it unwinds.
   */
  const waiting = new WeakMap<Fiber.RuntimeFiber<unknown, unknown>, Set<() => void>>()
  const waitingOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>) => {
    let statements = waiting.get(fiber)
    if (statements === undefined) {
      const made = statements = new Set()
      waiting.set(fiber, made)
      // A fiber that ends while a statement of its own waits was interrupted there: it is cancelled.
      fiber.addObserver(() => {
        for (const cancel of made) cancel()
        made.clear()
      })
    }
    return statements
  }

  /**
   * One statement outside a transaction, as PgClient runs it (a checkout of its own, given back
   * when it ends; cancelled when interrupted, the cancel awaited for at most 5 s), without the view
   * of the connection and the cancel effect PgClient builds for every checkout: the statement's
   * ticket is known here, so a cancel names it directly, and only when one is asked for.
   *
   * An interrupted statement is cancelled when its fiber ends (an interruption always ends its
   * fiber, and a statement outside a transaction has nothing to undo before), not by a finalizer
   * of its own: an interruptible wait with a canceler costs about eight Effect operations more, on
   * every statement, interrupted or not.
   */
  const runStatement: PoolStatement = (text, values, transformRows) =>
    Effect.withFiberRuntime((fiber) =>
      Effect.async<ReadonlyArray<unknown>, SqlError.SqlError>((resume) => {
        const statements = waitingOf(fiber as Fiber.RuntimeFiber<unknown, unknown>)
        let ticket: number | undefined
        /** Interrupted before a connection came: it goes back at once. */
        let abandoned = false
        /** The checkout's connection, once given back (by its answer or its interruption). */
        let returned = false
        let giveBack: (cause?: Error) => void = () => {}
        const cancel = () => {
          if (ticket === undefined) {
            abandoned = true
            return
          }
          // Asked as PgClient asks it (the pool's query, which sends it only while the checkout lasts).
          let answered = false
          const done = () => {
            if (answered) return
            answered = true
            clearTimeout(limit)
            giveBack()
          }
          const limit = setTimeout(done, 5000)
          limit.unref()
          pool.query(`SELECT pg_cancel_backend(${ticket})`, done)
        }
        statements.add(cancel)
        connect((error, client, poolRelease) => {
          if (client === undefined) {
            statements.delete(cancel)
            return resume(Effect.fail(new SqlError.SqlError({ cause: error ?? new Error("No client returned"), message: "Failed to acquire connection" })))
          }
          if (abandoned) return poolRelease()
          const checkout = ticket = ++lastTicket
          const processId = processIdOf(client)
          if (processId !== undefined) open.set(checkout, processId)
          // A connection lost between statements is its client's "error" (unhandled, it would end the process).
          const onError = (cause: Error) => {
            statements.delete(cancel)
            giveBack(cause)
            resume(Effect.fail(new SqlError.SqlError({ cause, message: "Connection error" })))
          }
          giveBack = (cause?: Error) => {
            if (returned) return
            returned = true
            client.off("error", onError)
            open.delete(checkout)
            releaseWhenIdle(client, poolRelease, cause)
          }
          client.on("error", onError)
          client.query(text, values as Array<unknown>, (queryError: Error | null, result: unknown) => {
            statements.delete(cancel)
            giveBack()
            if (queryError) return resume(Effect.fail(new SqlError.SqlError({ cause: queryError, message: "Failed to execute statement" })))
            // Several statements in one text answer one result each.
            const rows = Array.isArray(result)
              ? result.map((one: { rows?: ReadonlyArray<unknown> }) => one.rows ?? [])
              : (result as { rows?: ReadonlyArray<unknown> }).rows ?? []
            resume(Effect.succeed(transformRows === undefined ? rows : transformRows(rows as ReadonlyArray<object>)))
          })
        })
      })
    )
  return runStatement
}

/**
 * A PgClient on a pool made here, as PgClient.layer makes it (the same options, the same first
 * `SELECT 1` within connectTimeout), so that the pool's use can be read (DatabasePool): the client
 * keeps its own pool to itself. The pool ends with the Layer's scope, also when the first
 * statement fails. Interrupted statements are cancelled as `cancel` says (StatementCancel).
 */
export const layerPg = (
  config: PgClient.PgClientConfig,
  cancel: StatementCancel = "own-connection",
  statementCache = DEFAULT_STATEMENT_CACHE_SIZE
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | DatabasePool, SqlError.SqlError> =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const { pool, runStatement } = yield* Effect.acquireRelease(
        Effect.sync(() => {
          installDriverRows()
          const made = new pg.Pool({
            connectionString: config.url ? Redacted.value(config.url) : undefined,
            user: config.username,
            host: config.host,
            database: config.database,
            password: config.password ? Redacted.value(config.password) : undefined,
            ssl: config.ssl,
            port: config.port,
            ...(config.stream ? { stream: config.stream } : {}),
            connectionTimeoutMillis: config.connectTimeout ? Duration.toMillis(config.connectTimeout) : undefined,
            idleTimeoutMillis: config.idleTimeout ? Duration.toMillis(config.idleTimeout) : undefined,
            max: config.maxConnections,
            min: config.minConnections,
            maxLifetimeSeconds: config.connectionTTL ? Duration.toSeconds(config.connectionTTL) : undefined,
            application_name: config.applicationName ?? "@effect/sql-pg",
            types: config.types ?? rowTypes
          })
          // A connection lost while idle is dropped by the pool; the error is the next statement's.
          made.on("error", () => {})
          made.on("connect", (client) => keepPreparedStatements(client, statementCache))
          return { pool: made, runStatement: guardCheckouts(made, cancel) }
        }),
        ({ pool }) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
      )
      yield* Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: config.connectTimeout ?? Duration.seconds(5),
          onTimeout: () => new SqlError.SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
        })
      )
      const client = PgClient.layerFromPool({
        acquire: Effect.succeed(pool),
        applicationName: config.applicationName,
        transformJson: config.transformJson,
        types: config.types
      })
      // The client's statements outside a transaction go by runStatement (the pool path).
      const poolPath = Layer.effectDiscard(Effect.map(SqlClient.SqlClient, (sql) => runOutsideTransactions(sql, runStatement)))
      return Layer.merge(
        Layer.provideMerge(poolPath, client),
        Layer.succeed(DatabasePool, { use: pool, max: pool.options.max ?? 10 })
      )
    })
  )

/** Pool and timeout options shared by both kinds of database. */
const poolOptions = (db: DatabaseSettings, maxConnections: number) => ({
  maxConnections,
  // node-postgres waits at most this long for a pooled connection (and for a new one).
  connectTimeout: Duration.seconds(db.sqlalchemy.pool_timeout),
  connectionTTL: Duration.seconds(db.sqlalchemy.pool_recycle),
  idleTimeout: Duration.seconds(Math.max(1, db.sqlalchemy.pool_recycle)),
  applicationName: db.sqlalchemy.connect_args.application_name ?? "baton",
  // The wire, the records and the columns are all snake_case: no name transforms.
  transformJson: false
})

/** A connection URL for the real server, with the statement timeout as a connection option. */
/**
 * The server's connection URL as the settings give it (libpq's TLS parameters included, which
 * serverConnection reads and takes out for node-postgres): what libpq's own tools are given.
 */
export const serverUrl = (db: DatabaseSettings): string => {
  const base = db.connection_url !== null
    ? Redacted.value(db.connection_url)
    : `postgresql://${encodeURIComponent(db.user ?? "postgres")}${
      db.password !== null ? `:${encodeURIComponent(Redacted.value(db.password))}` : ""
    }@${db.host}:${db.port ?? 5432}/${encodeURIComponent(db.name ?? "postgres")}`
  const url = new URL(base.replace(/^postgresql\+\w+:/, "postgresql:").replace(/^postgres:/, "postgresql:"))
  const options = [
    db.timeout > 0 ? `-c statement_timeout=${Math.round(db.timeout * 1000)}` : "",
    db.sqlalchemy.connect_args.search_path ? `-c search_path=${db.sqlalchemy.connect_args.search_path}` : ""
  ].filter(Boolean)
  if (options.length > 0 && !url.searchParams.has("options")) url.searchParams.set("options", options.join(" "))
  return url.toString()
}

/**
 * How to reach the real server: its URL (without the TLS parameters, read here) and node-postgres's
 * `ssl` option (tls.ts), the same for every connection a process opens (the pool, its LISTEN
 * connection, the leadership session).
 */
export const serverConnection = (db: DatabaseSettings): Effect.Effect<ServerTls, DatabaseError> =>
  Effect.try({
    try: () => serverUrl(db),
    // The message never quotes the URL: it may hold the password.
    catch: () => new DatabaseError({ message: "server.database.connection_url (or host, port, user, name) does not make a valid URL" })
  }).pipe(
    Effect.flatMap((url) =>
      Either.match(serverTls(db.sqlalchemy.connect_args.tls, url), {
        onLeft: (message) => Effect.fail(new DatabaseError({ message })),
        onRight: Effect.succeed
      })
    )
  )

/** Whether the settings name a real PostgreSQL server. */
export const usesServer = usesDatabaseServer

/** The embedded database's data directory: `{home}/database`. */
export const embeddedDataDir = (settings: SettingsValue) => path.join(settings.home, "database")

/** Describes where the database is, without credentials, for messages. */
export const describeDatabase = (settings: SettingsValue) => {
  const db = settings.server.database
  if (!usesServer(db)) return `the embedded database in ${embeddedDataDir(settings)}`
  const url = new URL(serverUrl(db))
  return `PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname}`
}

const connectionFailed = (settings: SettingsValue) => (cause: unknown) =>
  new DatabaseError({
    message: `Cannot connect to ${describeDatabase(settings)}: ${
      (cause as { cause?: { message?: string } })?.cause?.message ?? (cause as { message?: string })?.message ?? String(cause)
    }${
      isCertificateRefused(cause)
        ? " (the server's TLS certificate was refused: see sslmode and sslrootcert in the connection URL, or server.database.sqlalchemy.connect_args.tls)"
        : ""
    }`
  })

/** The error a guarded socket is destroyed with (its code counts as a lost connection). */
const silentDatabase = (what: string, ms: number) =>
  Object.assign(new Error(`The database did not answer ${what} within ${ms / 1000} s`), { code: "ETIMEDOUT" })

/**
 * The socket of a connection to a PostgreSQL server, destroyed when the server stops answering: when
 * connecting takes longer than `connectMs`, or when something was sent and nothing came back for
 * `answerMs`. A server that went away without closing its connections (a network partition, a paused
 * machine) would otherwise leave a statement waiting forever, and with it the request, the pooled
 * connection and the pool's other waiters; destroyed, the connection fails at once, the pool drops it,
 * and the request is answered 503. `answerMs` is longer than the statement timeout, which PostgreSQL
 * enforces itself while it answers. 0 turns a bound off.
 *
 * Only the plain TCP stream is watched: on a TLS connection the timer covers the request for TLS and
 * nothing after it (TLS then reads and writes the socket's handle directly).
 */
export const guardedSocket = (connectMs: number, answerMs: number) => (): net.Socket => {
  const socket = new net.Socket()
  let timer: ReturnType<typeof setTimeout> | undefined
  const disarm = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
  }
  const arm = (ms: number, what: string) => {
    if (timer !== undefined || ms <= 0 || socket.destroyed) return
    timer = setTimeout(() => socket.destroy(silentDatabase(what, ms)), ms)
    timer.unref()
  }
  const write = socket.write
  const watchedWrite = function(this: net.Socket, ...args: Array<unknown>) {
    arm(answerMs, "a statement")
    return (write as (...a: Array<unknown>) => boolean).apply(this, args)
  } as typeof socket.write
  const connect = socket.connect
  socket.connect = function(this: net.Socket, ...args: Array<unknown>) {
    arm(connectMs, "a new connection")
    const connecting = (connect as (...a: Array<unknown>) => net.Socket).apply(this, args)
    // connect() puts back the prototype's write (undoing a write-after-end guard): watch it after.
    this.write = watchedWrite
    return connecting
  } as typeof socket.connect
  socket.on("data", disarm)
  socket.once("close", disarm)
  return socket
}

/**
 * Prepared statements kept a connection (database/prepared.ts): as the settings say on a server;
 * none on the embedded database, whose connections all share PGlite's one session (a statement one
 * connection prepared would still be there, under the same name, for the next).
 */
export const statementCacheFor = (settings: SettingsValue): number =>
  usesServer(settings.server.database) ? statementCacheSize(settings.server.database.sqlalchemy.connect_args) : 0

/** A client of a real PostgreSQL server. */
export const layerServer = (settings: SettingsValue) => {
  const db = settings.server.database
  const connectMs = db.connection_timeout * 1000
  // The statement timeout plus the connection timeout: PostgreSQL ends a slow statement itself first.
  const answerMs = db.timeout > 0 ? (db.timeout + Math.max(db.connection_timeout, 1)) * 1000 : 0
  return Layer.unwrapEffect(
    serverConnection(db).pipe(
      Effect.map(({ ssl, url }) =>
        layerPg({
          stream: guardedSocket(connectMs, answerMs),
          url: Redacted.make(url),
          ssl,
          ...poolOptions(db, db.sqlalchemy.pool_size + db.sqlalchemy.max_overflow),
          minConnections: 0
        }, "own-connection", statementCacheFor(settings)).pipe(Layer.mapError(connectionFailed(settings)))
      )
    )
  )
}

/** A client of an embedded database served on a socket in `socketDir`. */
export const layerSocket = (socketDir: string, settings: SettingsValue) =>
  layerPg({
    host: socketDir,
    database: "postgres",
    username: "postgres",
    // A local socket: TLS settings do not apply (and node-postgres must not read PGSSLMODE).
    ssl: false,
    ...poolOptions(settings.server.database, 1)
  }, "skip", statementCacheFor(settings)).pipe(Layer.mapError(connectionFailed(settings)))

/**
 * The embedded database stored under `{home}/database`, with its client. PGlite's modules are
 * loaded here, so a server on PostgreSQL never loads them.
 */
export const layerEmbedded = (settings: SettingsValue) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const { ensureDir, serveEmbedded } = yield* Effect.promise(() => import("./embedded.ts"))
      const dataDir = embeddedDataDir(settings)
      yield* ensureDir(settings.home)
      const embedded = yield* serveEmbedded({ dataDir, socketDir: path.join(settings.home, "run") })
      return layerSocket(embedded.socketDir, settings)
    }).pipe(Effect.mapError((e) => new DatabaseError({ message: e.message })))
  )

/** The database the settings choose. */
export const layerFromSettings: Layer.Layer<SqlClient.SqlClient | PgClient.PgClient | DatabasePool, DatabaseError, Settings> =
  Layer.unwrapEffect(
    Effect.map(Settings, (settings) =>
      usesServer(settings.server.database) ? layerServer(settings) : layerEmbedded(settings)
    )
  )

/** Whether the database answers, within `server.database.connection_timeout`. */
export const ping = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const settings = yield* Settings
  yield* sql`SELECT 1`.pipe(
    Effect.timeoutFail({
      duration: Duration.seconds(settings.server.database.connection_timeout),
      onTimeout: () => new DatabaseError({ message: "The database did not answer in time" })
    }),
    Effect.mapError((e) => new DatabaseError({ message: e.message }))
  )
})
