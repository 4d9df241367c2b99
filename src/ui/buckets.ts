/** The dashboard's time buckets, cut as the reference cuts them. */
import type { Buckets } from "./repo.ts"

/** The dashboard's buckets of task run start times. */
export const DASHBOARD_BUCKETS = 20
const MINUTE_MS = 60_000

/**
 * The dashboard's buckets: from the minute of `after` to the end (59.999999 s) of the minute of
 * `before` (or of now), in 20 equal parts, each rounded to the microsecond half to even as the
 * reference divides its time spans. Undefined when the span is empty.
 */
export const dashboardBuckets = (after: Date, before: Date | undefined, at: Date): Buckets | undefined => {
  const minute = (date: Date) => BigInt(Math.floor(date.getTime() / MINUTE_MS) * MINUTE_MS) * 1000n
  const startUs = minute(after)
  const span = minute(before ?? at) + 59_999_999n - startUs
  if (span <= 0n) return undefined
  const count = BigInt(DASHBOARD_BUCKETS)
  const quotient = span / count
  const twice = (span % count) * 2n
  const widthUs = twice > count || (twice === count && quotient % 2n === 1n) ? quotient + 1n : quotient
  return { count: DASHBOARD_BUCKETS, startUs, widthUs }
}
