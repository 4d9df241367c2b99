/**
 * Creating the runs deployment schedules ask for: for given deployments over a window (the
 * `/deployments/{id}/schedule` endpoint), for every deployment running short of future runs (the
 * scheduler's main loop), and for deployments changed a moment ago (its quick loop).
 */
import { Duration, Effect } from "effect"
import { now } from "../domain/time.ts"
import { Settings } from "../settings/settings.ts"
import { RunsDue } from "../work-pools/runs-due.ts"
import { ScheduledRunsRepo } from "./scheduled-runs-repo.ts"
import { scheduledRuns, type ScheduleWindow } from "./scheduling.ts"
import { traced } from "../domain/traced.ts"

export interface WindowOptions {
  readonly start?: Date | undefined
  readonly end?: Date | undefined
  readonly minTimeSeconds?: number | undefined
  readonly minRuns?: number | undefined
  readonly maxRuns?: number | undefined
}

export class DeploymentScheduler extends Effect.Service<DeploymentScheduler>()("baton/DeploymentScheduler", {
  effect: Effect.gen(function* () {
    const repo = yield* ScheduledRunsRepo
    const due = yield* RunsDue
    const server = (yield* Settings).server
    const settings = server.services.scheduler

    /** The window from `start` (now by default), bounded by the scheduler's settings unless given. */
    const windowFrom = (options: WindowOptions, at: Date): ScheduleWindow => {
      const start = options.start ?? at
      return {
        start,
        end: options.end ?? new Date(start.getTime() + Duration.toMillis(settings.max_scheduled_time)),
        minTimeSeconds: options.minTimeSeconds ?? Duration.toSeconds(settings.min_scheduled_time),
        minRuns: options.minRuns ?? settings.min_runs,
        maxRuns: options.maxRuns ?? settings.max_runs
      }
    }

    /** Inserts the runs the deployments' active schedules ask for; how many were new. */
    const schedule = traced("DeploymentScheduler.schedule")(function* (
      ids: ReadonlyArray<string>,
      options: WindowOptions,
      autoScheduled = true
    ) {
      if (ids.length === 0) return 0
      const at = yield* now
      const window = windowFrom(options, at)
      const deployments = yield* repo.readForScheduling(ids)
      const runs = deployments.flatMap((d) =>
        scheduledRuns(d, d.schedules, window, { autoScheduled, defaultMaxRuns: server.deployment_schedule_max_scheduled_runs })
      )
      let inserted = 0
      for (let i = 0; i < runs.length; i += settings.insert_batch_size) {
        const batch = runs.slice(i, i + settings.insert_batch_size)
        const ids = yield* repo.insert(batch, at)
        inserted += ids.length
        // Held worker polls hear of a batch once per queue, after its commit.
        if (ids.length > 0) yield* due.announce(batch)
      }
      return inserted
    })

    /** Pages through the ids `page` yields (in id order), scheduling each page; how many runs were new. */
    const schedulePages = (page: (afterId: string | null, limit: number) => Effect.Effect<ReadonlyArray<string>, unknown>) =>
      Effect.gen(function* () {
        let total = 0
        let afterId: string | null = null
        while (true) {
          const ids: ReadonlyArray<string> = yield* page(afterId, settings.deployment_batch_size)
          total += yield* schedule(ids, {})
          if (ids.length < settings.deployment_batch_size) return total
          afterId = ids[ids.length - 1]!
        }
      })

    /** The main loop's iteration: every deployment with a schedule short of future runs. */
    const scheduleDue = Effect.gen(function* () {
      const at = yield* now
      const until = new Date(at.getTime() + Duration.toMillis(settings.min_scheduled_time))
      const total = yield* schedulePages((afterId, limit) =>
        repo.idsNeedingRuns({ at, minRuns: settings.min_runs, until, afterId, limit })
      )
      yield* Effect.logDebug(`Scheduled ${total} runs.`)
      return total
    }).pipe(Effect.withSpan("DeploymentScheduler.scheduleDue"))

    /** The quick loop's iteration: deployments updated within the last loop interval (plus a second). */
    const scheduleRecent = Effect.gen(function* () {
      const at = yield* now
      const since = new Date(at.getTime() - (settings.recent_deployments_loop_seconds + 1) * 1000)
      const total = yield* schedulePages((afterId, limit) => repo.idsUpdatedSince({ since, afterId, limit }))
      yield* Effect.logDebug(`Scheduled ${total} runs for recently updated deployments.`)
      return total
    }).pipe(Effect.withSpan("DeploymentScheduler.scheduleRecent"))

    return { schedule, scheduleDue, scheduleRecent } as const
  }),
  dependencies: [RunsDue.Default, ScheduledRunsRepo.Default]
}) {}
