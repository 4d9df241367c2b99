/**
 * Leadership among the processes that share one PostgreSQL database: the singleton services (the
 * scheduler, late runs, pause expirations, cancellation cleanup, foreman, repossessor, db_vacuum)
 * run only in the process that holds a session-level advisory lock on the database.
 *
 * Each process keeps one connection of its own for it. A follower waits on it in
 * `pg_advisory_lock`, which PostgreSQL grants the moment the leader's session ends: a leader that
 * stops, crashes or is killed hands over at once. TCP keepalives on both ends notice a leader cut
 * off by the network (PostgreSQL then ends its session and frees the lock). Every iteration of a
 * singleton service first asks `leads`, which checks on that connection that the lock is still held
 * (a fence): a leader whose connection broke stops at its next iteration, before the database
 * would let another process lead.
 *
 * On the embedded database one process serves it: that process always leads.
 */
import { Duration, Effect, Layer, Queue } from "effect"
import pg from "pg"
import { serverConnection, usesServer } from "./client.ts"
import { Settings } from "../settings/settings.ts"

/** The advisory lock's two keys ("bato" and 1); advisory locks are per database. */
const LOCK_KEYS = [0x6261746f, 1] as const

/** How long a fence query may take before the lock counts as lost. */
const FENCE_TIMEOUT = Duration.seconds(5)

/** Keepalive timings: a peer silent for about 10 + 3 × 5 seconds is gone. */
const KEEPALIVE_IDLE_SECONDS = 10
const KEEPALIVE_INTERVAL_SECONDS = 5
const KEEPALIVE_COUNT = 3

const messageOf = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

export class Leadership extends Effect.Service<Leadership>()("baton/Leadership", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const db = settings.server.database
    if (!usesServer(db)) {
      return { leads: Effect.succeed(true), isLeader: Effect.succeed(true), changed: Effect.never } as const
    }
    // The pool's URL and TLS: a process whose pool connects over TLS leads over TLS too.
    const { ssl, url } = yield* serverConnection(db)
    const retry = Duration.seconds(Math.max(1, db.connection_timeout))

    /** The session that holds (or waits for) the lock; undefined between two attempts. */
    let session: pg.Client | undefined
    let leading = false
    // Told when this process starts or stops leading (for those who show it, not for the fence).
    const changes = yield* Queue.sliding<void>(1)

    const lose = (reason: string) =>
      Effect.suspend(() => {
        const held = session
        session = undefined
        const wasLeading = leading
        leading = false
        if (wasLeading) changes.unsafeOffer(undefined)
        if (held !== undefined) held.end().catch(() => undefined)
        return wasLeading
          ? Effect.logWarning(`This process no longer leads the singleton services: ${reason}`)
          : Effect.logDebug(`Waiting to lead the singleton services: ${reason}`)
      })

    /** Connects, waits for the lock, leads until the connection ends; fails with why it ended. */
    const campaign = Effect.gen(function* () {
      const client = new pg.Client({
        connectionString: url,
        keepAlive: true,
        // A host that never answers fails the attempt (tried again after `retry`) instead of hanging it.
        connectionTimeoutMillis: Math.max(1, db.connection_timeout) * 1000,
        keepAliveInitialDelayMillis: KEEPALIVE_IDLE_SECONDS * 1000,
        application_name: "baton leadership",
        ssl
      })
      // Listened to from the start: an "error" event without a listener would end the process.
      const closed = new Promise<Error>((resolve) => {
        client.on("error", (error) => resolve(error))
        client.on("end", () => resolve(new Error("the connection was closed")))
      })
      const ended = Effect.flatMap(Effect.promise(() => closed), (error) => Effect.fail(error))
      session = client
      yield* Effect.tryPromise({ try: () => client.connect(), catch: (cause) => new Error(`cannot connect: ${messageOf(cause)}`) })
      yield* Effect.tryPromise({
        try: () =>
          client.query(
            `SET statement_timeout = 0; SET tcp_keepalives_idle = ${KEEPALIVE_IDLE_SECONDS}; ` +
              `SET tcp_keepalives_interval = ${KEEPALIVE_INTERVAL_SECONDS}; SET tcp_keepalives_count = ${KEEPALIVE_COUNT}`
          ),
        catch: (cause) => new Error(messageOf(cause))
      })
      // Waits (without a timeout) until no other session holds the lock.
      yield* Effect.raceFirst(
        Effect.tryPromise({
          try: () => client.query("SELECT pg_advisory_lock($1, $2)", [...LOCK_KEYS]),
          catch: (cause) => new Error(messageOf(cause))
        }),
        ended
      )
      leading = true
      changes.unsafeOffer(undefined)
      yield* Effect.logInfo("This process leads the singleton services")
      return yield* ended
    })

    yield* campaign.pipe(
      Effect.catchAll((error) => lose(error.message)),
      Effect.zipRight(Effect.sleep(retry)),
      Effect.forever,
      Effect.ensuring(lose("the process is stopping")),
      Effect.forkScoped
    )

    /**
     * The lock check in flight on the lock's connection, shared by every service asking meanwhile:
     * one statement at a time on that connection, however many services start an iteration at once.
     */
    let checking: { readonly client: pg.Client; readonly result: Promise<pg.QueryResult<{ held: boolean }>> } | undefined
    const check = (client: pg.Client) => {
      if (checking?.client === client) return checking.result
      const result = client.query<{ held: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objid = $2
           AND objsubid = 2 AND pid = pg_backend_pid() AND granted) AS held`,
        [...LOCK_KEYS]
      )
      const current = { client, result }
      checking = current
      const done = () => {
        if (checking === current) checking = undefined
      }
      result.then(done, done)
      return result
    }

    /** Whether this process leads, checked on the lock's own connection (the fence before each iteration). */
    const leads = Effect.suspend(() => {
      const client = session
      if (!leading || client === undefined) return Effect.succeed(false)
      return Effect.tryPromise(() => check(client)).pipe(
        Effect.timeout(FENCE_TIMEOUT),
        Effect.map((result) => result.rows[0]?.held === true),
        // An answer of a connection since replaced says nothing about the current one.
        Effect.catchAll((error) => Effect.as(session === client ? lose(`the lock's connection failed: ${messageOf(error)}`) : Effect.void, false)),
        Effect.flatMap((held) => (held || !leading ? Effect.succeed(held) : Effect.as(lose("the lock is no longer held"), false)))
      )
    })

    /** Whether this process leads, as it last knew (no statement). */
    const isLeader = Effect.sync(() => leading)

    /** Returns once this process has started or stopped leading since the last call. */
    const changed = Queue.take(changes)

    return { leads, isLeader, changed } as const
  })
}) {
  /** For a process that never leads (an API-only replica): it does not even ask for the lock. */
  static readonly never = Layer.succeed(this, this.make({ leads: Effect.succeed(false), isLeader: Effect.succeed(false), changed: Effect.never }))
}
