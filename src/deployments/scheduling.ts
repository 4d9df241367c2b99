/**
 * Which runs a deployment's schedules ask for in a window of time, the reference's way: dates from
 * `start`, at most `maxRuns` per schedule and none after `end`; within those caps at least `minRuns`,
 * and on until one date is `minTime` past the start. Pure: the scheduler service and the
 * `/deployments/{id}/schedule` endpoint both insert what this computes.
 */
import { pythonDate } from "../domain/time.ts"
import { nextDates, type Schedule } from "./schedules.ts"

export interface ScheduleWindow {
  readonly start: Date
  readonly end: Date
  /** Seconds past `start` that one date must reach (when the caps allow). */
  readonly minTimeSeconds: number
  readonly minRuns: number
  readonly maxRuns: number
}

/** The dates one schedule contributes to the window. */
export const scheduledDates = (schedule: Schedule, window: ScheduleWindow): Array<Date> => {
  const candidates = nextDates(schedule, { n: window.maxRuns, start: window.start, end: window.end })
  const reach = window.start.getTime() + window.minTimeSeconds * 1000
  const dates: Array<Date> = []
  for (const date of candidates) {
    dates.push(date)
    if (dates.length >= window.minRuns && date.getTime() >= reach) break
  }
  return dates
}

/**
 * The key that makes a scheduled run unique per deployment, schedule and date; the reference's
 * format, so a run scheduled by either server is recognised by the other's key.
 */
export const scheduledRunKey = (deploymentId: string, scheduleId: string, date: Date, timezone: string | null | undefined) =>
  `scheduled ${deploymentId} ${scheduleId} ${pythonDate(date, timezone)}`

/** What a scheduled run takes from its deployment. */
export interface SchedulingDeployment {
  readonly id: string
  readonly flow_id: string
  readonly version: string | null
  readonly parameters: Record<string, unknown>
  readonly tags: ReadonlyArray<string>
  readonly labels: Record<string, unknown> | null
  readonly work_queue_name: string | null
  readonly work_queue_id: string | null
  readonly infrastructure_document_id: string | null
}

export interface SchedulingSchedule {
  readonly id: string
  readonly schedule: Schedule
  readonly parameters: Record<string, unknown>
  readonly slug: string | null
  /** At most this many runs ahead for this schedule; null: the server's default. */
  readonly max_scheduled_runs: number | null
}

/** A run to insert in the Scheduled state. */
export interface ScheduledRun {
  readonly flow_id: string
  readonly deployment_id: string
  readonly deployment_version: string | null
  readonly work_queue_name: string | null
  readonly work_queue_id: string | null
  readonly parameters: Record<string, unknown>
  readonly infrastructure_document_id: string | null
  readonly idempotency_key: string
  readonly tags: ReadonlyArray<string>
  readonly labels: Record<string, unknown>
  readonly auto_scheduled: boolean
  readonly scheduled_time: Date
  readonly created_by: { readonly id: string; readonly type: "SCHEDULE"; readonly display_value: string }
}

const scheduleKind = (schedule: Schedule) =>
  "interval" in schedule ? "IntervalSchedule" : "cron" in schedule ? "CronSchedule" : "RRuleSchedule"

/** The labels every run of a deployment carries: the deployment's, then the flow and deployment ids. */
export const deploymentRunLabels = (deployment: Pick<SchedulingDeployment, "id" | "flow_id" | "labels">) => ({
  ...deployment.labels,
  "prefect.flow.id": deployment.flow_id,
  "prefect.deployment.id": deployment.id
})

/**
 * The runs `schedules` ask for in `window`: schedule after schedule, dates ascending, each schedule
 * capped at its `max_scheduled_runs` (or `defaultMaxRuns`). Auto-scheduled runs are tagged
 * "auto-scheduled"; a schedule's parameters override the deployment's.
 */
export const scheduledRuns = (
  deployment: SchedulingDeployment,
  schedules: ReadonlyArray<SchedulingSchedule>,
  window: ScheduleWindow,
  options: { readonly autoScheduled: boolean; readonly defaultMaxRuns: number }
): Array<ScheduledRun> =>
  schedules.flatMap((schedule) => {
    const maxRuns = Math.min(window.maxRuns, schedule.max_scheduled_runs ?? options.defaultMaxRuns)
    return scheduledDates(schedule.schedule, { ...window, maxRuns }).map((date) => ({
      flow_id: deployment.flow_id,
      deployment_id: deployment.id,
      deployment_version: deployment.version,
      work_queue_name: deployment.work_queue_name,
      work_queue_id: deployment.work_queue_id,
      parameters: { ...deployment.parameters, ...schedule.parameters },
      infrastructure_document_id: deployment.infrastructure_document_id,
      idempotency_key: scheduledRunKey(deployment.id, schedule.id, date, schedule.schedule.timezone),
      tags: options.autoScheduled ? ["auto-scheduled", ...deployment.tags] : [...deployment.tags],
      labels: deploymentRunLabels(deployment),
      auto_scheduled: options.autoScheduled,
      scheduled_time: date,
      created_by: { id: schedule.id, type: "SCHEDULE" as const, display_value: schedule.slug ?? scheduleKind(schedule.schedule) }
    }))
  })
