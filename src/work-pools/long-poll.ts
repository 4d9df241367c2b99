/**
 * A held worker poll (`wait_seconds` > 0): when the poll finds nothing, it waits for a run to become
 * due in one of its queues, then polls again. A run becomes due when it enters the Scheduled state
 * within the poll's window (announced through RunsDue, from this process or another), or when the
 * soonest future Scheduled run of the queues enters the window as time passes (a timer on Effect's
 * Clock). The window slides with time: a poll held for s seconds looks s seconds past the
 * `scheduled_before` it was sent, as the same worker polling again then would. Every poll it makes
 * is the normal one (same query, same side effects); when the wait ends it polls once more and
 * answers that (usually []); when the API stops it answers [] at once.
 */
import { Duration, Effect } from "effect"
import { now } from "../domain/time.ts"
import type { RunsDue } from "./runs-due.ts"

/** The longest a poll may be held, in seconds. */
export const MAX_WAIT_SECONDS = 60

export interface HoldOptions<A, E> {
  readonly queueIds: ReadonlyArray<string>
  readonly waitSeconds: number
  readonly scheduledBefore: Date | null
  readonly scheduledAfter: Date | null
  /** The normal poll, with its window ending at `scheduledBefore`. */
  readonly poll: (scheduledBefore: Date | null) => Effect.Effect<ReadonlyArray<A>, E>
  /** The soonest Scheduled run of the queues after `after` (not before `notBefore`). */
  readonly nextScheduledTime: (after: Date, notBefore: Date | null) => Effect.Effect<Date | null, E>
  readonly due: RunsDue
}

type Woken = { readonly _tag: "announced"; readonly earliest: number } | { readonly _tag: "timer" } | { readonly _tag: "stopped" }

export const holdPoll = <A, E>(options: HoldOptions<A, E>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const { due, scheduledAfter } = options
      // Watch before the first poll: a run committed while it runs is announced, not missed.
      const watch = yield* due.watch(options.queueIds)
      const start = (yield* now).getTime()
      const deadline = start + options.waitSeconds * 1000
      const lookahead = options.scheduledBefore === null ? null : options.scheduledBefore.getTime() - start
      const windowEnd = (at: number) => (lookahead === null ? null : new Date(at + lookahead))

      /** When the soonest run past the window enters it (Infinity: none, or every run is in the window already). */
      const nextEntry = (at: number) =>
        lookahead === null
          ? Effect.succeed(Infinity)
          : Effect.map(options.nextScheduledTime(windowEnd(at)!, scheduledAfter), (next) =>
            next === null ? Infinity : next.getTime() - lookahead)

      let runs = yield* options.poll(options.scheduledBefore)
      if (runs.length > 0) return runs
      let entry = yield* nextEntry(start)
      while (true) {
        const at = (yield* now).getTime()
        if (at >= deadline) break
        const woken: Woken = yield* Effect.raceAll([
          Effect.map(watch.next, (earliest): Woken => ({ _tag: "announced", earliest })),
          Effect.as(Effect.sleep(Duration.millis(Math.min(deadline, entry) - at)), { _tag: "timer" } as Woken),
          Effect.as(due.stopped, { _tag: "stopped" } as Woken)
        ])
        if (woken._tag === "stopped") return []
        const woke = (yield* now).getTime()
        if (woken._tag === "announced") {
          const earliest = woken.earliest
          // Before the window's start: this poll never answers it.
          if (scheduledAfter !== null && earliest !== -Infinity && earliest < scheduledAfter.getTime()) continue
          // Past the window's end: it is due when the window reaches it.
          if (lookahead !== null && earliest > woke + lookahead) {
            entry = Math.min(entry, earliest - lookahead)
            continue
          }
        } else if (woke >= deadline) {
          break
        }
        yield* watch.clear
        runs = yield* options.poll(windowEnd(woke))
        if (runs.length > 0) return runs
        entry = yield* nextEntry(woke)
      }
      yield* watch.clear
      return yield* options.poll(windowEnd((yield* now).getTime()))
    })
  )
