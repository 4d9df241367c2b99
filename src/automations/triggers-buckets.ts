/**
 * Evaluating an event trigger's buckets. Each event trigger keeps one bucket per for_each key: a
 * window [start, end) and the number of expected events seen in it. A Reactive trigger fires as
 * soon as its bucket holds `threshold` events, then waits for the rest of the window; a Proactive
 * trigger fires when a window closes with fewer than `threshold` events. `after` events open a
 * bucket; without them buckets follow each other. A bucket that had fired and then closes without
 * firing again resolves the automation.
 */
import { Effect } from "effect"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import type { ReceivedEvent } from "../events/schemas.ts"
import { type Bucket, BucketsRepo } from "./buckets-repo.ts"
import { expects, meetsThreshold, startsAfter } from "./firing.ts"
import type { Automation, EventTrigger } from "./schemas.ts"
import type { Fire } from "./triggers-fire.ts"

/** The trigger's window in milliseconds. */
export const within = (trigger: EventTrigger) => trigger.within * 1000

export const keyOf = (trigger: EventTrigger, automation: Automation, key: ReadonlyArray<string>) => ({
  automationId: automation.id,
  triggerId: trigger.id,
  key
})

export const makeEvaluateBucket = (fire: Fire) =>
  Effect.gen(function* () {
    const buckets = yield* BucketsRepo

    /**
     * Evaluates one bucket at `at` (the event's time, or now for proactive evaluation): counts the
     * event, fires when the posture's condition holds, and moves on to the next window when the
     * current one is over. The bucket that remains, if any.
     */
    const evaluate = (
      trigger: EventTrigger,
      automation: Automation,
      start: Bucket,
      at: Date,
      event: ReceivedEvent | null
    ): Effect.Effect<Bucket | undefined, unknown> =>
      Effect.gen(function* () {
        let bucket = start
        let count = event ? 1 : 0
        const time = at.getTime()
        // An older, out-of-order event, or one for a window that already fired.
        if (time < bucket.start.getTime()) return bucket
        const immediate = trigger.posture === "Reactive" && trigger.within === 0
        if (count > 0 && (immediate || (bucket.start.getTime() <= time && time < bucket.end.getTime()))) {
          bucket = yield* buckets.increment(bucket, count, event)
          count = 0
        }
        const ready = trigger.posture === "Reactive" || bucket.end.getTime() <= time
        const meets = meetsThreshold(trigger, bucket.count)
        const labels = Object.fromEntries([...trigger.for_each].sort().map((label, i) => [label, bucket.bucketing_key[i] ?? ""]))
        let firedAt: Date | null = null
        if (ready && meets) {
          firedAt = yield* now
          yield* fire({
            id: yield* newId,
            trigger,
            trigger_states: ["Triggered"],
            triggered: firedAt,
            triggering_labels: labels,
            triggering_firings: [],
            triggering_event: event ?? bucket.last_event
          })
          yield* buckets.remove(bucket)
        } else if (time < bucket.end.getTime()) {
          // A proactive trigger whose one event both starts and satisfies it: the event starts the next window.
          if (event && trigger.posture === "Proactive" && !meets && startsAfter(trigger, event.event) && expects(trigger, event.event)) {
            yield* buckets.remove(bucket)
            return yield* buckets.startNew(
              keyOf(trigger, automation, bucket.bucketing_key),
              event.occurred,
              new Date(event.occurred.getTime() + within(trigger)),
              0,
              event,
              null
            )
          }
          return bucket
        } else if (bucket.triggered_at !== null) {
          // The window after a firing closed without the trigger firing again: the automation resolved.
          yield* fire({
            id: yield* newId,
            trigger,
            trigger_states: ["Resolved"],
            triggered: yield* now,
            triggering_labels: labels,
            triggering_firings: [],
            triggering_event: event ?? bucket.last_event
          })
        }
        if (trigger.after.length > 0) {
          // The next bucket waits for another starting event.
          yield* buckets.remove(bucket)
          return undefined
        }
        if (trigger.within === 0) return undefined
        const nextStart = new Date(Math.max(bucket.end.getTime(), time))
        const nextEnd = new Date(nextStart.getTime() + within(trigger))
        const key = keyOf(trigger, automation, bucket.bucketing_key)
        if (trigger.posture === "Reactive" && count > 0) {
          // The event belongs to the next window: count it there (it may fire it).
          const next = yield* buckets.startNew(key, nextStart, nextEnd, 0, null, firedAt)
          return yield* evaluate(trigger, automation, next, at, event)
        }
        return yield* buckets.startNew(key, nextStart, nextEnd, count, null, firedAt)
      })

    return evaluate
  })

export type EvaluateBucket = Effect.Effect.Success<ReturnType<typeof makeEvaluateBucket>>
