/**
 * The event persister: takes the events clients sent (published on the bus) and writes them into
 * the event log as they come, all that is queued in one write (up to WRITE_MOST), at the latest `flush_interval` after they arrive (in
 * every process that receives events: API-only processes run it too); a failed write is retried
 * `max_flush_retries` times, `flush_interval` apart (as the reference retries at its next flush), so
 * a database away for less than that loses no event. What is queued when the server stops, and
 * what it was writing, is written before it does (retried 100 ms apart there: shutdown does not
 * wait long). A second loop
 * relays the event outbox (events/relay.ts), and `drain` does both.
 * Every 15 minutes a second loop, run by the leader alone (database/leadership.ts), deletes the
 * events older than server.events.retention_period,
 * `batch_size_delete` at a time.
 */
import { Chunk, Duration, Effect, Fiber, Layer, Option, Queue, Schedule } from "effect"
import { unavailabilityAsFailure } from "../database/errors.ts"
import { now } from "../domain/time.ts"
import { safeCause } from "../http/log-safe.ts"
import { Metrics } from "../http/metrics-registry.ts"
import { Settings } from "../settings/settings.ts"
import { defineService, registerServices } from "../services/runner.ts"
import { EventBus } from "./bus.ts"
import { EventLog } from "./log.ts"
import { EventRelay } from "./relay.ts"
import { EventsRepo } from "./repo.ts"
import type { ReceivedEvent } from "./schemas.ts"

const TRIM_EVERY_MS = 15 * 60 * 1000

/**
 * The most events one write takes. A write takes everything queued (as the reference flushes its
 * whole queue), so a backlog is written in few large transactions rather than many of batch_size;
 * this bounds one transaction.
 */
const WRITE_MOST = 2000

/**
 * Writes of a backlog in flight at once. One write at a time left each side idle while the other
 * worked (the server building the next statement, PostgreSQL running this one): under event load
 * the server was idle about half the time, waiting for the write. Two overlap them. Their commits
 * may end out of order, which the log's readers wait out (log-order.ts); an id in both (a repeat the
 * bus no longer remembered) waits for the first, and a deadlock is retried as a busy database.
 */
const WRITES_IN_FLIGHT = 2

export class EventPersister extends Effect.Service<EventPersister>()("baton/EventPersister", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const bus = yield* EventBus
    const repo = yield* EventsRepo
    const log = yield* EventLog
    const relay = yield* EventRelay
    const metrics = yield* Metrics
    const options = settings.server.services.event_persister
    const writeMost = Math.max(options.batch_size, WRITE_MOST)
    // Subscribed from the start, so no event published before the first flush is missed.
    const { events: queue, ack, start } = yield* bus.consume("event-persister", options.read_batch_size)
    yield* metrics.eventBacklog(Queue.size(queue))

    const retries: Record<"spaced" | "briefly", Schedule.Schedule<unknown>> = {
      spaced: Schedule.recurs(options.max_flush_retries).pipe(Schedule.intersect(Schedule.spaced(Duration.seconds(options.flush_interval)))),
      briefly: Schedule.recurs(options.max_flush_retries).pipe(Schedule.intersect(Schedule.spaced("100 millis")))
    }

    const store = (batch: ReadonlyArray<ReceivedEvent>, retry: keyof typeof retries): Effect.Effect<void> =>
      // An event the database refuses is dropped alone (log.ts); only an unavailable database is a
      // failure here (every other statement error is a defect): worth another try.
      unavailabilityAsFailure(log.writeOrDropRefused(batch)).pipe(
        Effect.retry({ schedule: retries[retry] }),
        Effect.flatMap(({ refused, written }) =>
          Effect.zipRight(metrics.eventsPersisted(written), refused > 0 ? metrics.eventsDropped(refused) : Effect.void)),
        Effect.catchAllCause((cause) =>
          Effect.zipRight(
            Effect.logError(`Dropped ${batch.length} events that could not be written`, safeCause(cause)),
            metrics.eventsDropped(batch.length)
          )
        )
      )

    /** Batches taken from the queue whose write was interrupted (the server stopping): the next drain writes them. */
    const interrupted: Array<ReadonlyArray<ReceivedEvent>> = []

    const write = (batch: ReadonlyArray<ReceivedEvent>, retry: keyof typeof retries) =>
      Effect.zipRight(store(batch, retry), ack(batch)).pipe(Effect.onInterrupt(() => Effect.sync(() => void interrupted.push(batch))))

    /**
     * Writes what was interrupted, then everything queued now, a batch at a time (WRITES_IN_FLIGHT
     * at once); how many events.
     */
    const drainWith = (retry: keyof typeof retries) => Effect.gen(function* () {
      yield* start
      let total = 0
      // Written again: what had committed is kept once (events are kept by id).
      for (const batch of interrupted.splice(0)) {
        yield* write(batch, retry)
        total += batch.length
      }
      const inFlight: Array<Fiber.RuntimeFiber<void>> = []
      while (true) {
        const batch = Chunk.toReadonlyArray(yield* Queue.takeUpTo(queue, writeMost))
        if (batch.length === 0) break
        if (inFlight.length === WRITES_IN_FLIGHT) yield* Fiber.join(inFlight.shift()!)
        inFlight.push(yield* Effect.fork(write(batch, retry)))
        total += batch.length
      }
      // Everything taken is written when this returns (a drain before shutdown, a test's).
      for (const fiber of inFlight) yield* Fiber.join(fiber)
      return total
    })
    const drain = Effect.zipRight(relay.drain, drainWith("briefly"))

    const retention = Duration.toMillis(settings.server.events.retention_period)

    /** Deletes the events past retention, a batch at a time; how many. */
    const trim = Effect.gen(function* () {
      const before = new Date((yield* now).getTime() - retention)
      let total = 0
      while (true) {
        const deleted = yield* repo.deleteOlderThan(before, options.batch_size_delete)
        total += deleted
        if (deleted < options.batch_size_delete) return total
      }
    })

    /** One iteration: waits up to flush_interval for a first event, then writes all that is queued. */
    const tick = Effect.gen(function* () {
      yield* start
      const first = yield* Queue.take(queue).pipe(Effect.timeoutOption(Duration.seconds(options.flush_interval)))
      if (Option.isNone(first)) return
      const rest = Chunk.toReadonlyArray(yield* Queue.takeUpTo(queue, writeMost - 1))
      yield* write([first.value, ...rest], "spaced")
      yield* drainWith("spaced")
    })

    // Notes left in the outbox are relayed by whichever process looks next: a failure here loses nothing.
    yield* Effect.addFinalizer(() =>
      Effect.asVoid(Effect.zipRight(relay.drain.pipe(Effect.catchAllCause((cause) => Effect.logWarning("Could not relay the event outbox", cause))), drainWith("briefly")))
    )

    return { tick, drain, trim, relay: relay.tick } as const
  }),
  dependencies: [EventBus.Default, EventsRepo.Default, EventLog.Default, EventRelay.Default, Metrics.Default]
}) {}

export const EventPersisterService = registerServices(
  defineService({
    name: "event_persister",
    // An iteration itself waits (up to flush_interval) for events to write.
    interval: () => Duration.zero,
    tick: Effect.flatMap(EventPersister, (persister) => persister.tick)
  }),
  defineService({
    name: "event_persister",
    loop: "outbox",
    // An iteration waits for this process's writes (or a while), then relays what the outbox holds.
    interval: () => Duration.zero,
    tick: Effect.flatMap(EventPersister, (persister) => persister.relay)
  }),
  defineService({
    name: "event_persister",
    loop: "retention",
    // Deleting is done once for all processes sharing the database: by the leader.
    interval: () => Duration.millis(TRIM_EVERY_MS),
    tick: Effect.flatMap(EventPersister, (persister) => persister.trim),
    singleton: true
  })
).pipe(Layer.provide(EventPersister.Default))
