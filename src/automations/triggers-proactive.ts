/**
 * Proactive evaluation, every `proactive_granularity`: a proactive trigger's windows are evaluated
 * as of now (a window that closed with fewer than `threshold` events fires), each trigger again
 * when its earliest open window ends.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { now } from "../domain/time.ts"
import { BucketsRepo } from "./buckets-repo.ts"
import type { Automation, EventTrigger } from "./schemas.ts"
import { type EvaluateBucket, keyOf, within } from "./triggers-buckets.ts"
import type { TriggerIndex } from "./triggers-index.ts"

export const makeProactive = (index: TriggerIndex, evaluate: EvaluateBucket) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const buckets = yield* BucketsRepo

    /** Evaluates one proactive trigger as of now; when it should be evaluated next. */
    const proactive = (trigger: EventTrigger, automation: Automation) =>
      Effect.gen(function* () {
        const asOf = yield* now
        let runAgainAt = asOf.getTime() + within(trigger)
        yield* sql.withTransaction(
          Effect.gen(function* () {
            if (trigger.for_each.length === 0) {
              yield* buckets.ensure(keyOf(trigger, automation, []), asOf, new Date(asOf.getTime() + within(trigger)), null)
            }
            yield* buckets.removeSatisfied(automation.id, trigger.id, trigger.threshold)
            for (const bucket of yield* buckets.forTrigger(automation.id, trigger.id)) {
              const next = yield* evaluate(trigger, automation, bucket, asOf, null)
              const end = next?.end.getTime()
              if (end !== undefined && asOf.getTime() < end && end < runAgainAt) runAgainAt = end
            }
          })
        )
        return runAgainAt
      })

    /** Evaluates the proactive triggers due at `at`, each failing on its own. */
    const evaluateDue = (at: Date) =>
      Effect.gen(function* () {
        for (const trigger of [...index.eventTriggers.values()]) {
          if (trigger.posture !== "Proactive") continue
          const due = index.nextProactiveRun.get(trigger.id) ?? at.getTime()
          if (due > at.getTime()) continue
          const automation = index.loaded.get(trigger.id)?.automation
          if (automation === undefined) continue
          const next = yield* proactive(trigger, automation).pipe(
            Effect.catchAllCause((cause) =>
              Effect.as(Effect.logError(`Automation ${automation.id} trigger ${trigger.id} could not be evaluated proactively`, cause), undefined)
            )
          )
          if (next !== undefined) index.nextProactiveRun.set(trigger.id, next)
        }
      })

    return evaluateDue
  })
