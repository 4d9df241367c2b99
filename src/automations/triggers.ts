/**
 * The triggers service: evaluates the enabled automations against the events of the event log, as
 * its consumer "triggers" (events/log.ts): a batch of events is evaluated in the transaction that
 * moves the consumer's cursor past it, by whichever process holds the cursor, so each event is
 * evaluated once across every process on the database, and what a firing writes commits with it.
 *
 * The parts: the index of loaded automations (triggers-index.ts), bucket evaluation
 * (triggers-buckets.ts), what a firing does (triggers-fire.ts), reactive evaluation of events in
 * order (triggers-reactive.ts), proactive evaluation (triggers-proactive.ts), and listening for
 * other replicas' automation changes (triggers-listen.ts); the loops are registered in
 * triggers-registration.ts.
 *
 * All evaluation is serialised (one actor): the reactive loop and the periodic loop take turns.
 * Automations are loaded once and reloaded when they change: at once for changes made in this
 * process, and by comparing the automations' snapshot (newest update, count) every period for
 * changes made by other replicas.
 */
import { Chunk, Duration, Effect, Queue } from "effect"
import { now } from "../domain/time.ts"
import { ALL_EVENTS, EventLog, NO_EVENTS } from "../events/log.ts"
import { EventsRepo } from "../events/repo.ts"
import type { ReceivedEvent } from "../events/schemas.ts"
import { Events } from "../events/service.ts"
import { Settings } from "../settings/settings.ts"
import { AutomationActions } from "./actions.ts"
import { BucketsRepo } from "./buckets-repo.ts"
import { AutomationChanges } from "./changes.ts"
import { makeOrdering } from "./ordering.ts"
import { AutomationsRepo } from "./repo.ts"
import { makeEvaluateBucket } from "./triggers-buckets.ts"
import { makeFire } from "./triggers-fire.ts"
import { makeTriggerIndex } from "./triggers-index.ts"
import { Leadership } from "../database/leadership.ts"
import { makeListenForChanges } from "./triggers-listen.ts"
import { makeProactive } from "./triggers-proactive.ts"
import { makeReactive } from "./triggers-reactive.ts"

/** Events the reactive loop evaluates per transaction. */
const EVENT_BATCH = 100

export class TriggersEngine extends Effect.Service<TriggersEngine>()("baton/TriggersEngine", {
  scoped: Effect.gen(function* () {
    const buckets = yield* BucketsRepo
    const settings = yield* Settings
    const leadership = yield* Leadership
    const log = yield* EventLog
    const changes = yield* AutomationChanges
    const changeQueue = yield* changes.subscribe
    const lock = yield* Effect.makeSemaphore(1)
    const ordering = yield* makeOrdering(settings)

    const index = yield* makeTriggerIndex
    const fire = yield* makeFire(index)
    const evaluate = yield* makeEvaluateBucket(fire)
    const { evaluateInOrder, releaseStoredLeaders } = yield* makeReactive(index, evaluate, ordering)
    const evaluateProactive = yield* makeProactive(index, evaluate)

    const serialised = <A, E, R>(effect: Effect.Effect<A, E, R>) => lock.withPermits(1)(effect)

    const takeChanges = Effect.flatMap(Queue.takeAll(changeQueue), (pending) => index.applyChanges(Chunk.toReadonlyArray(pending)))

    /** Evaluates a batch of events in order (after applying automation changes). */
    const evaluateBatch = (batch: ReadonlyArray<ReceivedEvent>) =>
      Effect.gen(function* () {
        yield* index.ensureStarted
        yield* takeChanges
        for (const event of batch) yield* evaluateInOrder(event)
      })

    /**
     * Without an enabled automation no event is evaluated: the log's events pass by unread. Asked
     * under the same turn as the batches, after the automation changes heard so far.
     */
    const handles = Effect.gen(function* () {
      yield* index.ensureStarted
      yield* takeChanges
      return index.loaded.size === 0 ? NO_EVENTS : ALL_EVENTS
    })

    // Serialised around the batch's transaction: the turn is taken before the connection.
    const consumer = yield* log.consumer("triggers", EVENT_BATCH, evaluateBatch, serialised, handles)

    /** Reactive loop: waits for new events in the log, then evaluates them. */
    const reactiveTick = consumer.tick

    /** Evaluates the events in the log now, without waiting for more (tests, shutdown). */
    const drain = Effect.asVoid(consumer.drain)

    /**
     * Periodic loop: reloads changed automations, evaluates the followers whose leader another
     * process stored meanwhile and the lost followers and, in the leader, due
     * proactive triggers, and sweeps closed buckets.
     */
    const periodicTick = serialised(
      Effect.gen(function* () {
        yield* index.ensureStarted
        yield* takeChanges
        yield* index.reconcile(false)
        const at = yield* now
        yield* releaseStoredLeaders
        for (const event of yield* ordering.lostFollowers(at.getTime())) yield* evaluateInOrder(event)
        // The buckets are shared by every process on the database: the leader alone evaluates and sweeps them.
        if (yield* leadership.leads("triggers")) {
          yield* evaluateProactive(at)
          const buffer = Duration.toMillis(settings.server.events.expired_bucket_buffer)
          yield* buckets.sweep(new Date(at.getTime() - buffer))
        }
      })
    )

    /** Listens for automation changes other replicas announce, until the connection is lost. */
    const listenForChanges = yield* makeListenForChanges(index, serialised)

    return { reactiveTick, periodicTick, drain, listenForChanges } as const
  }),
  dependencies: [
    AutomationActions.Default,
    AutomationChanges.Default,
    AutomationsRepo.Default,
    BucketsRepo.Default,
    EventLog.Default,
    Events.Default,
    EventsRepo.Default
  ]
}) {}
