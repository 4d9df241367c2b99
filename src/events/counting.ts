/**
 * Counting events by time: buckets of `time_interval` × `time_unit`, aligned on a fixed pivot so the
 * same event always falls in the same bucket, at most 1000 of them over the filter's window.
 */
import { Schema } from "effect"
import { EARLIEST, LATEST } from "../domain/time.ts"

export const Countable = Schema.Literal("day", "time", "event", "resource").annotations({ identifier: "Countable" })
export type Countable = typeof Countable.Type

export const TimeUnit = Schema.Literal("week", "day", "hour", "minute", "second").annotations({ identifier: "TimeUnit" })
export type TimeUnit = typeof TimeUnit.Type

/** Buckets are counted from here. */
export const PIVOT = new Date(Date.UTC(2024, 3, 1))

const UNIT_SECONDS: Record<TimeUnit, number> = { week: 7 * 86400, day: 86400, hour: 3600, minute: 60, second: 1 }

export const MAX_BUCKETS = 1000

/** A bucket's length in milliseconds. */
export const bucketMillis = (unit: TimeUnit, interval: number) => UNIT_SECONDS[unit] * interval * 1000

/** Why these buckets cannot be counted, or undefined. */
export const bucketProblem = (since: Date, until: Date, unit: TimeUnit, interval: number): string | undefined => {
  if (interval < 0.01) return "The minimum interval is 0.01"
  const size = bucketMillis(unit, interval)
  // Buckets are aligned on the pivot: the first one starts at or before `since`, and a bucket of
  // thousands of years would start or end where no timestamp can be written.
  const firstStart = PIVOT.getTime() + size * Math.floor((since.getTime() - PIVOT.getTime()) / size)
  if (!(firstStart >= EARLIEST.getTime() && firstStart + size <= LATEST.getTime())) {
    return "The given interval would create buckets outside the supported range of dates (years 1 to 9999). Please reduce the interval."
  }
  const buckets = Math.ceil((until.getTime() - since.getTime()) / size)
  return buckets > MAX_BUCKETS
    ? `The given interval would create ${buckets} buckets, which is too many. Please increase the interval or reduce the time range to produce ${MAX_BUCKETS} buckets or fewer.`
    : undefined
}

const endOfPeriod = (now: Date, unit: TimeUnit): Date => {
  const d = new Date(now.getTime())
  switch (unit) {
    case "second":
      d.setUTCMilliseconds(999)
      break
    case "minute":
      d.setUTCSeconds(59, 999)
      break
    case "hour":
      d.setUTCMinutes(59, 59, 999)
      break
    case "day":
      d.setUTCHours(23, 59, 59, 999)
      break
    case "week": {
      const daysToSunday = (7 - d.getUTCDay()) % 7
      d.setUTCDate(d.getUTCDate() + daysToSunday)
      d.setUTCHours(23, 59, 59, 999)
      break
    }
  }
  return d
}

export interface Span {
  readonly index: number
  readonly start: Date
  readonly end: Date
}

/** The buckets covering since..until (until no later than the end of the current period). */
export const spans = (since: Date, until: Date, unit: TimeUnit, interval: number, now: Date): ReadonlyArray<Span> => {
  const size = bucketMillis(unit, interval)
  const last = until.getTime() > now.getTime() ? endOfPeriod(now, unit).getTime() : until.getTime()
  const first = Math.floor((since.getTime() - PIVOT.getTime()) / size)
  const out: Array<Span> = []
  for (let index = first, start = PIVOT.getTime() + size * first; start < last; index++, start += size) {
    out.push({ index, start: new Date(start), end: new Date(start + size - 1) })
  }
  return out
}
