/**
 * The event relay: turns the notes in the event outbox (state transitions, status changes, each
 * stored by the transaction that made it) into events in the log, a batch per transaction: the
 * notes go when their events are written, or stay for the next try. Every process relays (its own
 * writes wake it once they commit); notes a killed process left behind are taken by any process's
 * next look. Two relays never take the same note (FOR UPDATE SKIP LOCKED).
 */
import { SqlClient } from "@effect/sql"
import { Cause, Duration, Effect, Queue } from "effect"
import { inTransaction, isDataException } from "../database/errors.ts"
import { now, realClock } from "../domain/time.ts"
import { makeSpacing } from "../domain/wakeups.ts"
import type { TransitionNote } from "../orchestration/transitions.ts"
import { Transitions } from "../orchestration/transitions.ts"
import { EventLog } from "./log.ts"
import { EventOutboxRepo } from "./outbox-repo.ts"
import { transitionEvents } from "./run-events.ts"
import { RunResourcesRepo } from "./run-resources-repo.ts"
import type { ReceivedEvent } from "./schemas.ts"
import { fromStatusNote, type StatusChange, StatusChanges, type StatusNote } from "./status-changes.ts"
import { statusEvents } from "./status-events.ts"
import { StatusResourcesRepo } from "./status-resources-repo.ts"

/** Notes turned into events per transaction. */
const BATCH = 500

/** How long the relay waits for a write of this process before looking anyway (notes left by a killed process). */
const LOOK_ANYWAY = Duration.seconds(5)

/**
 * The least time between two relays woken again and again: under load each committed state change
 * wakes the relay, and each relay is a transaction of several statements (and wakes every reader of
 * the log); spaced out, one relays the notes of many writes. Woken after a quiet spell, it relays at once.
 */
export const RELAY_GAP_MS = 100

const isTransition = (note: unknown): note is TransitionNote => (note as { type?: unknown })?.type === "transition"
const isStatus = (note: unknown): note is StatusNote => (note as { type?: unknown })?.type === "status"

export class EventRelay extends Effect.Service<EventRelay>()("baton/EventRelay", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const outbox = yield* EventOutboxRepo
    const log = yield* EventLog
    const context = yield* Effect.context<RunResourcesRepo | StatusResourcesRepo>()
    // What this process commits wakes the relay: transitions and status changes, heard after commit.
    const committed = yield* Queue.dropping<void>(1)
    yield* (yield* Transitions).listen(() => void committed.unsafeOffer(undefined))
    const changes = yield* (yield* StatusChanges).subscribe

    /**
     * One batch: notes out, their events in, one transaction; how many notes. `careful` writes the
     * events so that one the database refuses is dropped rather than holding back every note after
     * it (a savepoint per try); the batch is tried without first, and again carefully only when the
     * database refused a value.
     */
    const relayBatchAs = (careful: boolean) => inTransaction(
      sql,
      Effect.gen(function* () {
        const notes = yield* outbox.take(BATCH)
        if (notes.length === 0) return 0
        const received = yield* now
        const transitionNotes = notes.filter(isTransition)
        const statusNotes = notes.filter(isStatus)
        const changeOf = new Map<StatusNote, StatusChange>(statusNotes.map((note) => [note, fromStatusNote(note)]))
        const [byTransition, byChange] = yield* Effect.all([
          transitionEvents(transitionNotes, received),
          statusEvents([...changeOf.values()], received)
        ]).pipe(Effect.provide(context))
        // In the notes' order: the order the writes were made in.
        const events = notes.flatMap((note): Array<ReceivedEvent> => {
          const event = isTransition(note) ? byTransition.get(note) : isStatus(note) ? byChange.get(changeOf.get(note)!) : undefined
          return event === undefined ? [] : [event]
        })
        if (careful) yield* log.writeOrDropRefused(events)
        else yield* log.write(events)
        return notes.length
      })
    )
    const relayBatch = Effect.catchAllCause(
      relayBatchAs(false),
      (cause) => (isDataException(Cause.squash(cause)) ? relayBatchAs(true) : Effect.failCause(cause))
    )

    /** Relays every note there is now; how many. */
    const drain = Effect.gen(function* () {
      let total = 0
      while (true) {
        const relayed = yield* relayBatch
        total += relayed
        if (relayed < BATCH) return total
      }
    })

    const spaced = makeSpacing(RELAY_GAP_MS)

    /** One iteration: waits for a write of this process (or LOOK_ANYWAY), then relays what there is. */
    const tick = Effect.gen(function* () {
      yield* Effect.raceFirst(
        Effect.raceFirst(Queue.take(committed), Queue.take(changes)),
        Effect.withClock(Effect.sleep(LOOK_ANYWAY), realClock)
      )
      yield* spaced(Effect.gen(function* () {
        // What else came meanwhile is in the outbox too.
        yield* Queue.takeAll(committed)
        yield* Queue.takeAll(changes)
        yield* drain
      }))
    })

    return { tick, drain } as const
  }),
  dependencies: [EventOutboxRepo.Default, EventLog.Default, RunResourcesRepo.Default, StatusResourcesRepo.Default, Transitions.Default, StatusChanges.Default]
}) {}
