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

/**
 * Spaces out work that wakes on news: `spaced(work)` runs `work` no sooner than `gapMs` (real time)
 * after the previous run started. Woken after a quiet spell, it runs at once; woken again and again
 * (under load), it runs at most once a gap, each run then covering what came meanwhile.
 */
export const makeSpacing = (gapMs: number) => {
  let last = Number.NEGATIVE_INFINITY
  return <A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      const wait = last + gapMs - realClock.unsafeCurrentTimeMillis()
      const start = Effect.suspend(() => {
        last = realClock.unsafeCurrentTimeMillis()
        return work
      })
      return wait > 0 ? Effect.zipRight(Effect.withClock(Effect.sleep(wait), realClock), start) : start
    })
}
