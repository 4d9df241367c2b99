/** The window of a run history (`/flow_runs/history`, `/task_runs/history`): its bounds and its buckets. */
import { Effect } from "effect"
import { ValidationError } from "../domain/errors.ts"
import { LATEST, notAfterLatest } from "../domain/time.ts"

export interface HistoryWindow {
  readonly start: Date
  readonly end: Date
  readonly intervalSeconds: number
}

/** The window of a history request; intervals under a second are refused, as the reference does. */
export const historyWindow = (body: {
  readonly history_start: Date
  readonly history_end: Date
  readonly history_interval_seconds: number
}) =>
  body.history_interval_seconds < 1
    ? Effect.fail(new ValidationError({ detail: "History interval must not be less than 1 second." }))
    // An interval whose first bucket ends past the last date there is has no buckets to answer.
    : !(body.history_start.getTime() + body.history_interval_seconds * 1000 <= LATEST.getTime())
    ? Effect.fail(new ValidationError({ detail: "History interval is too large." }))
    : Effect.succeed<HistoryWindow>({
      start: body.history_start,
      end: body.history_end,
      intervalSeconds: body.history_interval_seconds
    })

/**
 * The buckets of a history window: at most 500 from `start`, each `intervalSeconds` long, the runs
 * counted being those expected to start before `until`. A bucket past the year 9999 ends at the
 * last instant there is.
 */
export const historyBuckets = (options: HistoryWindow) => {
  const span = (options.end.getTime() - options.start.getTime()) / 1000
  const buckets = Math.max(0, Math.min(500, Math.ceil(span / options.intervalSeconds)))
  const boundary = (i: number) => notAfterLatest(options.start.getTime() + i * options.intervalSeconds * 1000)
  return { buckets, until: boundary(buckets), intervalStart: boundary, intervalEnd: (i: number) => boundary(i + 1) }
}
