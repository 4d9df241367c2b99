/**
 * Wake-ups for readers that wait for news (new events, queued task runs): each reader watches for
 * the scope's life and waits until something was announced since it last looked, or `lookAnyway`
 * passed (in real time: news can come without an announcement, from a process that died before
 * sending it). Announcements while a reader is busy are kept, one at a time.
 */
import { type Duration, Effect, Queue, type Scope } from "effect"
import { realClock } from "./time.ts"

export interface Wakeups {
  /** Wakes every reader watching now. */
  readonly wakeAll: Effect.Effect<void>
  /** A reader's wait for the scope's life: returns once woken since the last call, or after `lookAnyway`. */
  readonly watch: Effect.Effect<Effect.Effect<void>, never, Scope.Scope>
}

export const makeWakeups = (lookAnyway: Duration.DurationInput): Wakeups => {
  const waiters = new Set<Queue.Queue<void>>()
  return {
    wakeAll: Effect.sync(() => {
      for (const waiter of waiters) waiter.unsafeOffer(undefined)
    }),
    watch: Effect.map(
      Effect.acquireRelease(
        Effect.tap(Queue.dropping<void>(1), (waiter) => Effect.sync(() => waiters.add(waiter))),
        (waiter) => Effect.zipRight(Effect.sync(() => waiters.delete(waiter)), Queue.shutdown(waiter))
      ),
      (waiter) => Effect.asVoid(Effect.raceFirst(Queue.take(waiter), Effect.withClock(Effect.sleep(lookAnyway), realClock)))
    )
  }
}
