/**
 * Leadership among the processes that share one PostgreSQL database: the singleton services (the
 * scheduler, late runs, pause expirations, cancellation cleanup, foreman, repossessor, db_vacuum, the
 * event persister's retention loop, the triggers' proactive part) each run only in the process that
 * holds that service's session-level advisory lock. A process asks for the locks of the services it
 * runs: one that runs only some of them never keeps the others from a process that runs them.
 *
 * Each process keeps one connection of its own for its locks. While it lacks one it wants, it tries
 * for the missing ones every POLL (`pg_try_advisory_lock`, under a transaction lock so that processes
 * asking for the same services at once do not split them: one takes them all). PostgreSQL frees a
 * session's locks the moment the session ends: a leader that stops, crashes or is killed hands over
 * at the next try. TCP keepalives on both ends notice a leader cut off by the network (PostgreSQL
 * then ends its session and frees its locks). Every iteration of a singleton service first asks
 * `leads`, which checks on that connection that the lock is still held (a fence): a leader whose
 * connection broke stops at its next iteration, before the database would let another process lead.
 *
 * On the embedded database one process serves it: that process always leads.
 */
import { Deferred, Duration, Effect, FiberId, Layer, Queue } from "effect"
import pg from "pg"
import { serverConnection, usesServer } from "./client.ts"
import { realClock } from "../domain/time.ts"
import { Settings, type SettingsValue } from "../settings/settings.ts"

/** What a process can lead: a service of `server.services`. */
export type Role = keyof SettingsValue["server"]["services"]

/** The advisory locks' first key ("bato"); advisory locks are per database. */
const LOCK_CLASS = 0x6261746f

/**
 * Each service's lock (the second key). Fixed numbers, never reused: processes of two versions on one
 * database must agree. 1 was the one lock of all the singletons before each had its own; 0 is the
 * transaction lock that orders the tries.
 */
const ROLE_KEYS: { readonly [role in Role]: number } = {
  cancellation_cleanup: 2,
  db_vacuum: 3,
  event_persister: 4,
  event_logger: 5,
  foreman: 6,
  late_runs: 7,
  scheduler: 8,
  pause_expirations: 9,
  repossessor: 10,
  task_run_recorder: 11,
  triggers: 12
}
const TRY_ORDER_KEY = 0
const roleOfKey = new Map(Object.entries(ROLE_KEYS).map(([role, key]) => [key, role as Role]))

/** How often a process lacking a lock it wants tries again; a killed leader's locks move within it. */
const POLL = Duration.seconds(1)

/** How long a stopping process waits for its locks' session to end. */
const CLOSE_TIMEOUT = Duration.seconds(2)

/** How long a fence query may take before the locks count as lost. */
const FENCE_TIMEOUT = Duration.seconds(5)

/** Keepalive timings: a peer silent for about 10 + 3 × 5 seconds is gone. */
const KEEPALIVE_IDLE_SECONDS = 10
const KEEPALIVE_INTERVAL_SECONDS = 5
const KEEPALIVE_COUNT = 3

const STOPPING = "the process is stopping"

const messageOf = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))
const sorted = (roles: Iterable<Role>) => [...roles].sort()

// The poll and the retry wait in real time: leadership is about other processes, not a test's clock.
const sleep = (duration: Duration.DurationInput) => Effect.sleep(duration).pipe(Effect.withClock(realClock))

export interface LeadershipShape {
  /**
   * Whether this process leads `role`, checked on the locks' own connection (the fence before each
   * iteration). A role not wanted yet is wanted from now on.
   */
  readonly leads: (role: Role) => Effect.Effect<boolean>
  /** Asks for the locks of `roles`, and returns after the next try (bounded by the connection timeout). */
  readonly want: (roles: ReadonlyArray<Role>) => Effect.Effect<void>
  /** The roles this process leads, as it last knew (no statement). */
  readonly leading: Effect.Effect<ReadonlyArray<Role>>
  /** Returns once this process has started or stopped leading something since the last call. */
  readonly changed: Effect.Effect<void>
}

/** Leads whatever it is asked about (the embedded database's one process). */
const always = Effect.sync((): LeadershipShape => {
  const wanted = new Set<Role>()
  return {
    leads: (role) => Effect.sync(() => (wanted.add(role), true)),
    want: (roles) => Effect.sync(() => roles.forEach((role) => wanted.add(role))),
    leading: Effect.sync(() => sorted(wanted)),
    changed: Effect.never
  }
})

export class Leadership extends Effect.Service<Leadership>()("baton/Leadership", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const db = settings.server.database
    if (!usesServer(db)) return yield* always
    // The pool's URL and TLS: a process whose pool connects over TLS leads over TLS too.
    const { ssl, url } = yield* serverConnection(db)
    const retry = Duration.seconds(Math.max(1, db.connection_timeout))

    /** The session that holds (or tries for) the locks; undefined between two attempts. */
    let session: pg.Client | undefined
    const wanted = new Set<Role>()
    const held = new Set<Role>()
    // Told when this process starts or stops leading (for those who show it, not for the fence).
    const changes = yield* Queue.sliding<void>(1)
    // Told when a role is wanted: the campaign tries at once instead of at its next poll.
    const wake = yield* Queue.sliding<void>(1)
    /** Done when the next try to start has finished, or when the connection failed meanwhile. */
    let nextTry = yield* Deferred.make<void>()
    /** The try starting now: those who wait from now on wait for the one after it. */
    const startTry = Effect.sync(() => {
      const done = nextTry
      nextTry = Deferred.unsafeMake(FiberId.none)
      return done
    })
    const tried = Effect.flatMap(startTry, (done) => Deferred.succeed(done, undefined))

    const lose = (roles: ReadonlyArray<Role>, reason: string) =>
      Effect.suspend(() => {
        const lost = roles.filter((role) => held.delete(role))
        if (lost.length === 0) return Effect.void
        changes.unsafeOffer(undefined)
        const line = `This process no longer leads the singleton services: ${reason} (${lost.join(", ")})`
        // Stopping hands them over as intended; losing them otherwise is worth an operator's look.
        return reason === STOPPING ? Effect.logInfo(line) : Effect.logWarning(line)
      })

    const endSession = (reason: string) =>
      Effect.suspend(() => {
        const client = session
        session = undefined
        const ending = client === undefined ? Promise.resolve() : client.end().catch(() => undefined)
        // A process that stops waits (briefly) for its session to end: its locks are free for the
        // next process when it is gone, not some time after.
        const waited = reason === STOPPING
          ? Effect.promise(() => ending).pipe(Effect.timeout(CLOSE_TIMEOUT), Effect.ignore, Effect.withClock(realClock))
          : Effect.void
        return Effect.zipRight(
          lose([...held], reason),
          Effect.zipRight(waited, held.size === 0 && wanted.size > 0 ? Effect.logDebug(`Waiting to lead the singleton services: ${reason}`) : Effect.void)
        )
      })

    /** Takes the free locks of the wanted roles not held; all of them or none against a process asking at once. */
    const tryFor = (client: pg.Client) =>
      Effect.gen(function* () {
        const missing = sorted(wanted).filter((role) => !held.has(role))
        if (missing.length === 0) return
        const result = yield* Effect.tryPromise({
          try: () =>
            client.query<{ key: number }>(
              `BEGIN; SELECT pg_advisory_xact_lock(${LOCK_CLASS}, ${TRY_ORDER_KEY});
               SELECT key FROM unnest(ARRAY[${missing.map((role) => ROLE_KEYS[role]).join(",")}]::int[]) AS key
                 WHERE pg_try_advisory_lock(${LOCK_CLASS}, key);
               COMMIT`
            ) as unknown as Promise<Array<pg.QueryResult<{ key: number }>>>,
          catch: (cause) => new Error(messageOf(cause))
        })
        const taken = (result[2]?.rows ?? []).map((row) => roleOfKey.get(Number(row.key))).filter((role) => role !== undefined)
        if (taken.length === 0) return
        for (const role of taken) held.add(role)
        changes.unsafeOffer(undefined)
        yield* Effect.logInfo(`This process leads the singleton services: ${sorted(taken).join(", ")}`)
      })

    /** Connects, then takes the locks it can and tries again for the others until the connection ends. */
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
      const next = Effect.suspend(() =>
        // Everything wanted is held: nothing to try until another role is wanted.
        sorted(wanted).every((role) => held.has(role)) ? Queue.take(wake) : Effect.raceFirst(Queue.take(wake), sleep(POLL))
      )
      const round = Effect.flatMap(startTry, (done) => Effect.zipRight(Effect.ensuring(tryFor(client), Deferred.succeed(done, undefined)), next))
      return yield* Effect.raceFirst(Effect.forever(round), ended)
    })

    yield* campaign.pipe(
      Effect.catchAll((error) => Effect.zipRight(endSession(error.message), tried)),
      Effect.zipRight(sleep(retry)),
      Effect.forever,
      Effect.ensuring(Effect.zipRight(endSession(STOPPING), tried)),
      Effect.forkScoped
    )

    /**
     * The lock check in flight on the locks' connection, shared by every service asking meanwhile:
     * one statement at a time on that connection, however many services start an iteration at once.
     */
    let checking: { readonly client: pg.Client; readonly result: Promise<pg.QueryResult<{ key: number }>> } | undefined
    const check = (client: pg.Client) => {
      if (checking?.client === client) return checking.result
      const result = client.query<{ key: number }>(
        `SELECT objid::int AS key FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND objsubid = 2
           AND pid = pg_backend_pid() AND granted`,
        [LOCK_CLASS]
      )
      const current = { client, result }
      checking = current
      const done = () => {
        if (checking === current) checking = undefined
      }
      result.then(done, done)
      return result
    }

    /** Adds the roles not wanted yet; the try that will have taken what it could of them, if any. */
    const ask = (roles: ReadonlyArray<Role>) => {
      const added = roles.filter((role) => !wanted.has(role))
      if (added.length === 0) return undefined
      for (const role of added) wanted.add(role)
      wake.unsafeOffer(undefined)
      return nextTry
    }

    const want = (roles: ReadonlyArray<Role>) =>
      Effect.suspend(() => {
        const after = ask(roles)
        return after === undefined ? Effect.void : Deferred.await(after).pipe(Effect.timeout(retry), Effect.ignore, Effect.withClock(realClock))
      })

    const leads = (role: Role) =>
      Effect.suspend(() => {
        const client = session
        if (ask([role]) !== undefined) return Effect.succeed(false)
        if (!held.has(role) || client === undefined) return Effect.succeed(false)
        return Effect.tryPromise(() => check(client)).pipe(
          Effect.timeout(FENCE_TIMEOUT),
          Effect.flatMap((result) => {
            const keys = new Set(result.rows.map((row) => Number(row.key)))
            const gone = [...held].filter((other) => !keys.has(ROLE_KEYS[other]))
            return Effect.as(gone.length > 0 ? lose(gone, "the lock is no longer held") : Effect.void, keys.has(ROLE_KEYS[role]))
          }),
          // An answer of a connection since replaced says nothing about the current one.
          Effect.catchAll((error) =>
            Effect.as(session === client ? endSession(`the locks' connection failed: ${messageOf(error)}`) : Effect.void, false)
          ),
          Effect.map((leads) => leads && held.has(role))
        )
      })

    return {
      leads,
      want,
      leading: Effect.sync(() => sorted(held)),
      changed: Queue.take(changes)
    } satisfies LeadershipShape
  })
}) {
  /** For a process that never leads (an API-only replica): it does not even ask for the locks. */
  static readonly never = Layer.succeed(
    this,
    this.make({ leads: () => Effect.succeed(false), want: () => Effect.void, leading: Effect.succeed([]), changed: Effect.never })
  )
}
