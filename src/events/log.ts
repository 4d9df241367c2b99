/**
 * The event log: the `events` table read in the order its rows became final (database/log-order.ts).
 * Every event is written here, in the transaction of the write it tells of when there is one (a
 * state transition, a status change, an automation's change, a firing) and by the persister for the
 * events clients send. Readers follow the log:
 *
 * - consumers (the triggers service, the task run recorder) keep a cursor each in the database,
 *   locked while a batch is handled, in the same transaction that moves it: whichever process takes
 *   the lock handles the batch, and each event is handled once across every process;
 * - the live tail, one per process, hands every new event to the process's /events/out sockets.
 *
 * Writers wake the readers: in this process once the write commits, in the other processes sharing a
 * PostgreSQL server through NOTIFY on `baton_events` (sent by the writing transaction, so heard after
 * its commit). A reader also looks again now and then, in case a notification was lost.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import type { PgClient } from "@effect/sql-pg"
import { Cause, Duration, Effect, PubSub, Scope } from "effect"
import { databaseMessage, isDataException } from "../database/errors.ts"
import type { LogPosition } from "../database/log-order.ts"
import * as Notifications from "../database/notifications.ts"
import { afterCommit, inOpenTransaction, transaction } from "../database/transactions.ts"
import { RecentSet } from "../domain/recent.ts"
import { realClock } from "../domain/time.ts"
import { makeSpacing, makeWakeups } from "../domain/wakeups.ts"
import { loop } from "../services/runner.ts"
import { Settings } from "../settings/settings.ts"
import { EventsRepo, INSERT_BATCH } from "./repo.ts"
import type { ReceivedEvent } from "./schemas.ts"

/** The PostgreSQL channel writers announce new events on. */
export const EVENTS_CHANNEL = "baton_events"
/** What a writer says on it: that it wrote, and which process it is (`written <id>`). */
const WRITTEN = "written"

/**
 * Events a live subscriber (a websocket) may fall behind by before the oldest are dropped for it,
 * as the reference's subscription backlog: a slow reader costs at most this many, not the server
 * its memory.
 */
export const SUBSCRIPTION_BACKLOG = 256

/** Ids of events delivered live as received, remembered so the tail does not deliver them again. */
const DELIVERED_HERE = 10_000

/** Events read from the log at a time. */
const READ_BATCH = 500

/**
 * How soon a reader looks again when committed events wait for an older transaction to end: soon,
 * then less and less often while that transaction runs on.
 */
const PENDING_RETRY_FIRST = 20
const PENDING_RETRY_MOST = 500
const nextRetry = (ms: number) => Math.min(ms * 2, PENDING_RETRY_MOST)

/** How long a reader waits for a wake before looking anyway (a notification lost with its connection). */
const LOOK_ANYWAY = Duration.seconds(5)

/**
 * The least time between two looks of a consumer woken again and again: under load every commit of
 * a state change wakes it, and each look costs statements; spaced out, one look covers the events of
 * many writes. A consumer woken after a quiet spell looks at once.
 */
export const CONSUMER_LOOK_GAP_MS = 100

/** Which events a consumer's handler acts on: all of them, none now, or those whose name starts with `prefix`. */
export type EventsHandled = typeof ALL_EVENTS | typeof NO_EVENTS | { readonly prefix: string }
export const ALL_EVENTS = "all"
export const NO_EVENTS = "none"

/** What a write of events did: how many were new (not stored before), how many the database refused. */
export interface WriteOutcome {
  readonly written: number
  readonly refused: number
}

const sleepReal = (duration: Duration.DurationInput) => Effect.withClock(Effect.sleep(duration), realClock)

export class EventLog extends Effect.Service<EventLog>()("baton/EventLog", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const settings = yield* Settings
    const repo = yield* EventsRepo
    const database = yield* Effect.context<SqlClient.SqlClient | PgClient.PgClient>()
    const shared = yield* Notifications.sharedOrWarn("events are announced in this process only")

    // The readers of this process: woken when events were written (or after LOOK_ANYWAY).
    const { wakeAll: wakeLocal, watch } = makeWakeups(LOOK_ANYWAY)

    /**
     * What a write that stored events says: the readers of this process wake once its transaction
     * commits, those of other processes when its NOTIFY arrives (at its commit), sent by the statement
     * that stored them. A payload of its own: the client drops empty ones; identical ones in one
     * transaction are sent once. It names this process, whose listener passes over its own
     * announcements: its readers were woken at the commit already, and a second wake would have each
     * of them look again for nothing (under load, about one look in two).
     */
    const announcement = `${WRITTEN} ${crypto.randomUUID()}`
    const notification = shared ? { channel: EVENTS_CHANNEL, payload: announcement } : undefined

    /**
     * Writes events (those not stored yet, by id) into the log, in the current transaction if there
     * is one (no savepoint: a failure fails it, as any statement's); how many were new. Outside one,
     * events that take one statement need no transaction of their own.
     */
    const write = (events: ReadonlyArray<ReceivedEvent>) => {
      if (events.length === 0) return Effect.succeed(0)
      const written = Effect.tap(repo.write(events, notification), (n) => (n > 0 ? afterCommit(wakeLocal) : Effect.void))
      return events.length <= INSERT_BATCH
        ? written
        : Effect.flatMap(inOpenTransaction, (open) => (open ? written : transaction(sql, written)))
    }

    /** `write` as a savepoint inside the caller's transaction (a refusal leaves that usable), else as `write`. */
    const writeApart = (events: ReadonlyArray<ReceivedEvent>) =>
      Effect.flatMap(inOpenTransaction, (open) => (open ? transaction(sql, write(events)) : write(events)))

    /**
     * `write`, except that an event the database refuses (a value too large for its index, see
     * isDataException) does not take the others with it: the batch is written one event at a time
     * and only the refused ones are dropped, with a warning. Each try is its own transaction, or
     * savepoint inside the caller's, so a refusal leaves the caller's transaction usable. How many
     * were new, and how many were refused.
     */
    const writeOrDropRefused = (events: ReadonlyArray<ReceivedEvent>): Effect.Effect<WriteOutcome, SqlError> =>
      Effect.catchAllCause(Effect.map(writeApart(events), (written): WriteOutcome => ({ written, refused: 0 })), (cause) => {
        if (!isDataException(Cause.squash(cause))) return Effect.failCause(cause)
        if (events.length > 1) {
          return Effect.map(
            Effect.forEach(events, (event) => writeOrDropRefused([event])),
            (outcomes) => outcomes.reduce((a, b) => ({ written: a.written + b.written, refused: a.refused + b.refused }), { written: 0, refused: 0 })
          )
        }
        return Effect.as(
          Effect.logWarning("Dropped an event the database refused", {
            event_id: events[0]!.id,
            event: events[0]!.event.slice(0, 200),
            reason: databaseMessage(Cause.squash(cause)) ?? "refused"
          }),
          { written: 0, refused: 1 }
        )
      })

    /**
     * Reads the log from `from` on, handing each batch to `handle`, until nothing final is left;
     * where it got to. Committed events that wait for an older transaction are waited for, briefly.
     */
    const follow = <E, R>(
      from: LogPosition,
      handle: (events: ReadonlyArray<ReceivedEvent>) => Effect.Effect<void, E, R>,
      limit = READ_BATCH,
      whilePending: (position: LogPosition) => Effect.Effect<void, E, R> = () => Effect.void
    ) =>
      Effect.gen(function* () {
        let position = from
        let retry = PENDING_RETRY_FIRST
        while (true) {
          const batch = yield* repo.readAfter(position, limit)
          if (batch.length > 0) {
            yield* handle(batch.map((logged) => logged.event))
            position = batch[batch.length - 1]!.position
            retry = PENDING_RETRY_FIRST
          }
          if (batch.length === limit) continue
          const next = yield* repo.lookAfter(position)
          // Final since the read (an older transaction ended meanwhile): read it now.
          if (next.ready) continue
          if (!next.pending) return position
          yield* whilePending(position)
          yield* sleepReal(Duration.millis(retry))
          retry = nextRetry(retry)
        }
      })

    /**
     * One batch for consumer `name`: under its cursor's lock, reads up to `limit` final events after
     * it, hands them to `handle` and moves the cursor past them, in one transaction (what `handle`
     * writes commits with the cursor, or neither does). How many were handled (none when another
     * process holds the cursor, or nothing is final after it), and whether the cursor is missing.
     */
    const consumeBatch = <E, R>(name: string, limit: number, handle: (events: ReadonlyArray<ReceivedEvent>) => Effect.Effect<void, E, R>) =>
      transaction(
        sql,
        Effect.gen(function* () {
          const cursor = yield* repo.lockConsumer(name)
          if (cursor._tag === "Busy") return { handled: 0, missing: false }
          if (cursor._tag === "Missing") return { handled: 0, missing: true }
          const batch = yield* repo.readAfter(cursor.position, limit)
          if (batch.length === 0) return { handled: 0, missing: false }
          yield* handle(batch.map((logged) => logged.event))
          yield* repo.advanceConsumer(name, batch[batch.length - 1]!.position)
          return { handled: batch.length, missing: false }
        })
      )

    /**
     * A consumer of the log: `drain` handles what is final now (waiting briefly for events committed
     * behind a running transaction), `tick` waits for news first. The cursor starts where the log is
     * when the consumer first runs on this database. `around` wraps each batch's transaction (a lock
     * the handler needs is taken before the connection, never while holding it: the embedded
     * database has one). `handles` says, before each batch, which events the handler acts on: the
     * cursor moves over the others in one statement, without reading them or opening a transaction.
     */
    const consumer = <E, R>(
      name: string,
      limit: number,
      handle: (events: ReadonlyArray<ReceivedEvent>) => Effect.Effect<void, E, R>,
      around: <A, E2, R2>(effect: Effect.Effect<A, E2, R2>) => Effect.Effect<A, E2, R2> = (effect) => effect,
      handles: Effect.Effect<EventsHandled, E, R> = Effect.succeed(ALL_EVENTS)
    ) =>
      Effect.gen(function* () {
        const next = yield* watch
        // From when the consumer first exists: what is written after that is its to handle. A
        // database that does not answer yet is no reason not to start: the first batch makes it.
        yield* repo.ensureConsumer(name).pipe(
          Effect.catchAllCause((cause) => Effect.logWarning(`Could not make the event log cursor of ${name} yet`, cause))
        )
        const drain = Effect.gen(function* () {
          let total = 0
          let retry = PENDING_RETRY_FIRST
          while (true) {
            // What the handler acts on now: a consumer that reads only some events looks and moves
            // over the others in one statement; one that reads them all looks without the lock
            // first (an idle consumer costs one statement).
            const skip = yield* around(Effect.flatMap(handles, (which) =>
              which === ALL_EVENTS ? Effect.succeed(undefined) : repo.skipUnhandled(name, limit, which === NO_EVENTS ? null : which.prefix)
            ))
            const state = skip ?? (yield* repo.consumerState(name))
            if (!state.known) {
              yield* repo.ensureConsumer(name)
              continue
            }
            if (skip !== undefined) {
              // Another process holds the cursor: it handles them (and if it dies, a later look does).
              if (!skip.locked) return total
              total += skip.skipped
              if (skip.skipped > 0) retry = PENDING_RETRY_FIRST
              // More final events after a full batch passed over: look at them (a batch from the
              // first it handles comes next when there is one).
              if (!skip.ready && skip.more) continue
            }
            if (state.ready) {
              const { handled, missing } = yield* around(consumeBatch(name, limit, handle))
              if (missing) continue
              // Another process holds the cursor: it handles them (and if it dies, a later look does).
              if (handled === 0) return total
              total += handled
              retry = PENDING_RETRY_FIRST
              continue
            }
            if (!state.pending) return total
            yield* sleepReal(Duration.millis(retry))
            retry = nextRetry(retry)
          }
        })
        const spaced = makeSpacing(CONSUMER_LOOK_GAP_MS)
        return { drain, tick: Effect.zipRight(next, spaced(drain)) } as const
      })

    // The live tail: one reader per process, started by the first subscriber. Events this process
    // received reach its subscribers at once (`receivedHere`); the tail skips them when it reads them.
    const live = yield* Effect.acquireRelease(PubSub.sliding<ReceivedEvent>(SUBSCRIPTION_BACKLOG), PubSub.shutdown)
    const deliveredHere = new RecentSet<string>(DELIVERED_HERE)
    // Until the first subscriber there is no one to deliver to, and no tail to skip what was: events
    // received before then are left to the tail (they are in the log after it starts, or before).
    let tailStarted = false
    const receivedHere = (events: ReadonlyArray<ReceivedEvent>) =>
      Effect.suspend(() => {
        if (!tailStarted) return Effect.void
        for (const event of events) deliveredHere.add(event.id)
        return Effect.asVoid(PubSub.publishAll(live, events))
      })
    const scope = yield* Effect.scope
    const startTail = yield* Effect.cached(
      Effect.gen(function* () {
        tailStarted = true
        const next = yield* Scope.extend(watch, scope)
        let position = yield* repo.position()
        // Live subscribers do not wait for events to become final (a long transaction in this
        // database holds that back): committed ones are delivered at once and remembered, so that
        // they are not delivered again when the log reaches them.
        const early = new Set<string>()
        const publish = (events: ReadonlyArray<ReceivedEvent>) =>
          Effect.asVoid(PubSub.publishAll(live, events.filter((event) => !deliveredHere.delete(event.id) && !early.delete(event.id))))
        const publishEarly = (from: LogPosition) =>
          Effect.flatMap(repo.readPendingAfter(from, SUBSCRIPTION_BACKLOG), (events) => {
            const fresh = events.filter((event) => !early.has(event.id) && !deliveredHere.has(event.id))
            for (const event of fresh) early.add(event.id)
            return Effect.asVoid(PubSub.publishAll(live, fresh))
          })
        const tick = Effect.zipRight(
          next,
          Effect.suspend(() =>
            Effect.map(follow(position, publish, SUBSCRIPTION_BACKLOG, publishEarly), (reached) => void (position = reached))
          )
        )
        yield* Effect.forkIn(loop({ name: "events", loop: "live tail", tick }, Duration.zero), scope)
      })
    )

    /** Every event that enters the log from now on, for the scope's life (at most SUBSCRIPTION_BACKLOG behind). */
    const subscribe = Effect.zipRight(startTail, PubSub.subscribe(live))

    if (shared) {
      const listen = Notifications.listen({
        channel: EVENTS_CHANNEL,
        heartbeatSeconds: settings.server.services.triggers.pg_notify_heartbeat_interval_seconds,
        // Its own heartbeats say nothing about events, and its own writes woke its readers already.
        onPayload: (payload) => (payload === Notifications.HEARTBEAT_PAYLOAD || payload === announcement ? Effect.void : wakeLocal)
      }).pipe(Effect.provide(database))
      const reconnect = Duration.seconds(settings.server.services.triggers.pg_notify_reconnect_interval_seconds)
      yield* Effect.forkScoped(loop({ name: "events", loop: "listen", tick: listen }, reconnect))
    }

    return { write, writeOrDropRefused, consumer, subscribe, receivedHere } as const
  }),
  dependencies: [EventsRepo.Default]
}) {}
