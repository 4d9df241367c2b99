/**
 * Reactive evaluation: the triggers interested in an event evaluate their buckets with it, in the
 * order events follow each other (an event whose leader has not been seen waits for it, up to the
 * ordering's limits).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { now } from "../domain/time.ts"
import { EventsRepo } from "../events/repo.ts"
import type { ReceivedEvent } from "../events/schemas.ts"
import { type Bucket, BucketsRepo } from "./buckets-repo.ts"
import { bucketingKey, covers, expects, startsAfter } from "./firing.ts"
import { type CausalOrdering, PRECEDING_EVENT_LOOKBACK_MS } from "./ordering.ts"
import { type EvaluateBucket, keyOf, within } from "./triggers-buckets.ts"
import type { TriggerIndex } from "./triggers-index.ts"

export const makeReactive = (index: TriggerIndex, evaluate: EvaluateBucket, ordering: CausalOrdering) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const buckets = yield* BucketsRepo
    const eventsRepo = yield* EventsRepo

    /** Evaluates the triggers interested in one event. */
    const reactive = (event: ReceivedEvent) =>
      Effect.gen(function* () {
        for (const trigger of index.candidates(event.event)) {
          if (!covers(trigger, event)) continue
          const automation = index.loaded.get(trigger.id)!.automation
          const key = keyOf(trigger, automation, bucketingKey(trigger, event))
          yield* sql.withTransaction(
            Effect.gen(function* () {
              let bucket: Bucket | undefined
              const occurred = event.occurred.getTime()
              const end = new Date(occurred + within(trigger))
              if (startsAfter(trigger, event.event)) {
                // An event that both starts and is expected starts at -1, so it counts for the next one only.
                bucket = yield* buckets.ensure(key, event.occurred, end, event, expects(trigger, event.event) ? -1 : 0)
              }
              if (bucket === undefined && trigger.after.length === 0 && expects(trigger, event.event)) {
                // A first bucket reaches back over the lookback, to catch events arriving out of order.
                bucket = yield* buckets.ensure(key, new Date(occurred - PRECEDING_EVENT_LOOKBACK_MS), end, event)
              }
              if (!expects(trigger, event.event)) return
              bucket ??= yield* buckets.read(key)
              if (bucket === undefined) return
              yield* evaluate(trigger, automation, bucket, event.occurred, event)
            })
          )
        }
      })

    /** Evaluates the event, then the events that were waiting for it. */
    const evaluateInOrder = (event: ReceivedEvent): Effect.Effect<void, unknown> =>
      Effect.gen(function* () {
        if (yield* ordering.hasBeenSeen(event.id)) return
        const at = (yield* now).getTime()
        if (event.follows !== null && !(yield* ordering.hasBeenSeen(event.follows))) {
          const leaderKnown = (yield* eventsRepo.existing([event.follows])).length > 0
          if (yield* ordering.holdBack(event, at, leaderKnown)) return
        }
        yield* reactive(event).pipe(
          Effect.catchAllCause((cause) => Effect.logError(`Automations could not evaluate event ${event.id} (${event.event})`, cause))
        )
        yield* ordering.markSeen(event.id, at)
        for (const follower of yield* ordering.releaseFollowers(event.id)) yield* evaluateInOrder(follower)
      })

    /**
     * Evaluates the followers whose leader is now stored: evaluated by another process (or received
     * there), it will never be evaluated here, so its followers need not wait out the lookback.
     */
    const releaseStoredLeaders = Effect.gen(function* () {
      const leaders = yield* ordering.waitedFor(WAITED_FOR_BATCH)
      for (const leader of yield* eventsRepo.existing(leaders)) {
        for (const follower of yield* ordering.releaseFollowers(leader)) yield* evaluateInOrder(follower)
      }
    })

    return { evaluateInOrder, releaseStoredLeaders } as const
  })

/** Leaders looked up per periodic pass. */
const WAITED_FOR_BATCH = 1000
