/**
 * PostgreSQL LISTEN/NOTIFY between the processes that share a database server: announcing on a
 * channel, and listening on one over the client's dedicated listen connection (one per process,
 * however many listeners) with a self-heartbeat that notices a connection lost without an error.
 * The embedded database serves one process: nothing to announce or hear there.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Deferred, Duration, Effect, Stream } from "effect"
import { realClock } from "../domain/time.ts"

/** Whether other processes may share this database (a PostgreSQL server, not the embedded one). */
export const sharedServer = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(sql<{ shared: boolean }>`SELECT position('PGlite' in version()) = 0 AS shared`, (rows) => rows[0]!.shared)
)

/**
 * `sharedServer`, answering false (with a warning that says `consequence`) when it cannot tell: a
 * process that cannot tell keeps its announcements to itself.
 */
export const sharedOrWarn = (consequence: string) =>
  sharedServer.pipe(
    Effect.catchAll((error) => Effect.as(Effect.logWarning(`Could not tell whether the database is shared: ${consequence}`, error), false))
  )

/** The JSON object another process announced (its `from` is not `self`); undefined for this process's own or what is not JSON. */
export const fromOthers = (payload: string, self: string): Record<string, unknown> | undefined => {
  try {
    const data: unknown = JSON.parse(payload)
    return typeof data === "object" && data !== null && (data as { from?: unknown }).from !== self ? (data as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** Announces `payload` on `channel` (NOTIFY takes no parameters; pg_notify does). */
export const notify = (channel: string, payload: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.asVoid(sql`SELECT pg_notify(${channel}, ${payload})`))

/** What a listener sends itself; listeners skip it like any payload they do not understand. */
export const HEARTBEAT_PAYLOAD = JSON.stringify({ heartbeat: true })

/** Heartbeats sent in a row without hearing anything on the channel before the connection counts as lost. */
const MISSED_HEARTBEATS = 3

/**
 * The LISTEN statements of one client, one at a time. PgClient sends each on its one listen
 * connection as a listener's stream starts, and node-postgres warns (on stderr) about, and its next
 * major version refuses, a statement sent while the connection runs another: the listeners a process
 * starts together did so. A listener holds its client's turn until it hears itself on its channel,
 * which is when its LISTEN has taken effect.
 */
const listenTurns = new WeakMap<PgClient.PgClient, Effect.Semaphore>()
const listenTurnOf = (pg: PgClient.PgClient) => {
  let turn = listenTurns.get(pg)
  if (turn === undefined) listenTurns.set(pg, turn = Effect.unsafeMakeSemaphore(1))
  return turn
}

/** How often a listener waiting for its LISTEN to take effect announces itself on its channel. */
const KNOCK_EVERY = Duration.millis(20)

/**
 * Hands every payload announced on `channel` to `onPayload` until the connection is taken as lost:
 * every `heartbeatSeconds` the listener notifies itself, and when `MISSED_HEARTBEATS` heartbeats in a
 * row bring nothing back it fails (the caller listens again after its reconnect interval). The
 * heartbeats keep real time: a test clock moved hours ahead would otherwise send thousands of them
 * (each a statement) before the test could go on.
 */
export const listen = (options: {
  readonly channel: string
  readonly heartbeatSeconds: number
  readonly onPayload: (payload: string) => Effect.Effect<void, unknown>
}): Effect.Effect<never, unknown, PgClient.PgClient | SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const pg = yield* PgClient.PgClient
    let unanswered = 0
    const listening = yield* Deferred.make<void>()
    const heard = (payload: string) => Effect.suspend(() => {
      unanswered = 0
      return Effect.zipRight(Deferred.succeed(listening, undefined), options.onPayload(payload))
    })
    // Announces itself until it hears itself: an announcement before the LISTEN took effect is lost.
    // Never interrupted in the middle of an announcement: an interrupted statement is cancelled, and
    // a cancel that comes as the statement ends can hit the next statement on its connection.
    const untilListening = Effect.gen(function* () {
      while (!(yield* Deferred.isDone(listening))) {
        yield* notify(options.channel, HEARTBEAT_PAYLOAD)
        yield* Effect.raceFirst(Deferred.await(listening), Effect.withClock(Effect.sleep(KNOCK_EVERY), realClock))
      }
    })
    const beat = Effect.gen(function* () {
      while (true) {
        yield* Effect.withClock(Effect.sleep(Duration.seconds(options.heartbeatSeconds)), realClock)
        if (unanswered >= MISSED_HEARTBEATS) {
          return yield* Effect.fail(new Error(`notifications on ${options.channel} stopped arriving`))
        }
        unanswered += 1
        yield* notify(options.channel, HEARTBEAT_PAYLOAD)
      }
    })
    const turn = listenTurnOf(pg)
    let holding = true
    const giveTurn = Effect.suspend(() => {
      if (!holding) return Effect.void
      holding = false
      return turn.release(1)
    })
    return yield* Effect.acquireUseRelease(
      turn.take(1),
      () =>
        Effect.raceFirst(
          Effect.zipRight(Stream.runForEach(pg.listen(options.channel), heard), Effect.fail(new Error(`listening on ${options.channel} ended`))),
          // The heartbeats run from the start: a LISTEN that never takes effect ends the wait too.
          Effect.raceFirst(beat, Effect.zipRight(Effect.zipRight(untilListening, giveTurn), Effect.never))
        ),
      () => giveTurn
    )
  })
