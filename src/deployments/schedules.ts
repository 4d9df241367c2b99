/**
 * Deployment schedules as the reference models them — interval, cron and rrule, each in a time zone —
 * and the dates each yields. Time zones, DST and the expression languages come from luxon,
 * cron-parser and rrule rather than hand-written calendars.
 */
import { Either, ParseResult, Schema } from "effect"
import type { DateTime } from "luxon"
import type { RRule, RRuleSet } from "rrule"
import * as Lax from "../domain/lax.ts"
import { memoize, onFirstUse } from "../domain/on-first-use.ts"
import { Timestamp } from "../domain/time.ts"

// Loaded when a schedule is first checked or computed (domain/on-first-use.ts).
const cronParser = onFirstUse<typeof import("cron-parser")>("cron-parser")
const rrule = onFirstUse<typeof import("rrule")>("rrule")
const luxon = onFirstUse<typeof import("luxon")>("luxon")

/** The most dates one computation yields, as the reference bounds it. */
export const MAX_ITERATIONS = 1000

const TimeZone = Schema.String.pipe(
  Schema.filter((zone) => luxon().IANAZone.isValidZone(zone) || `Invalid timezone: '${zone}'`, {
    // Generated values (the fuzz tests) come from real zones: random text is almost never one.
    arbitrary: () => (fc) => fc.constantFrom("UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe")
  })
)

const validCron = (cron: string): string | undefined => {
  // cron-parser also reads shorter expressions; the reference (croniter) takes 5, 6 or 7 columns.
  const columns = cron.trim().split(/\s+/).length
  if (!cron.trim().startsWith("@") && (columns < 5 || columns > 7)) {
    return `Invalid cron string: '${cron}' (Exactly 5, 6 or 7 columns has to be specified for iterator expression.)`
  }
  try {
    cronParser().CronExpressionParser.parse(cron)
    return undefined
  } catch (cause) {
    return `Invalid cron string: '${cron}' (${(cause as Error).message})`
  }
}

const validRRule = (rule: string): string | undefined => {
  try {
    rrule().rrulestr(rule, { forceset: true })
    return undefined
  } catch (cause) {
    return `Invalid RRule string '${rule}': ${(cause as Error).message}`
  }
}

export const IntervalSchedule = Schema.Struct({
  /** Seconds between runs. */
  interval: Lax.Float.pipe(Schema.filter((seconds) => seconds > 0 || "interval must be positive")),
  anchor_date: Schema.optional(Timestamp),
  timezone: Schema.optionalWith(Schema.NullOr(TimeZone), { default: () => null })
}).annotations({ identifier: "IntervalSchedule", parseOptions: { onExcessProperty: "error" } })

export const CronSchedule = Schema.Struct({
  cron: Schema.String.pipe(
    Schema.filter((cron) => validCron(cron) ?? true, {
      arbitrary: () => (fc) => fc.constantFrom("* * * * *", "0 0 * * *", "*/15 9-17 * * 1-5", "0 12 1 */2 *", "30 2 L * *")
    })
  ),
  timezone: Schema.optionalWith(Schema.NullOr(TimeZone), { default: () => null }),
  day_or: Schema.optionalWith(Lax.Bool, { default: () => true })
}).annotations({ identifier: "CronSchedule", parseOptions: { onExcessProperty: "error" } })

export const RRuleSchedule = Schema.Struct({
  rrule: Schema.String.pipe(
    Schema.filter((rule) => validRRule(rule) ?? true, {
      arbitrary: () => (fc) =>
        fc.constantFrom("FREQ=DAILY", "FREQ=HOURLY;INTERVAL=6", "DTSTART:20260101T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO,FR", "FREQ=MONTHLY;BYMONTHDAY=1;COUNT=12")
    })
  ),
  timezone: Schema.optionalWith(Schema.NullOr(TimeZone), { default: () => "UTC" })
}).annotations({ identifier: "RRuleSchedule", parseOptions: { onExcessProperty: "error" } })

export const Schedule = Schema.Union(IntervalSchedule, CronSchedule, RRuleSchedule)
export type Schedule = typeof Schedule.Type

export interface DateWindow {
  /** At most this many dates (default 1, or MAX_ITERATIONS when `end` is given). */
  readonly n?: number
  readonly start: Date
  readonly end?: Date
}

const countOf = (window: DateWindow) => Math.min(window.n ?? (window.end ? MAX_ITERATIONS : 1), MAX_ITERATIONS)

const zoneOf = (timezone: string | null | undefined) => timezone ?? "UTC"

/**
 * Interval dates: from the anchor, whole days are added in the schedule's wall-clock time (a daily run
 * stays at 09:00 across DST changes) and the rest of the interval as elapsed seconds.
 */
const intervalDates = (schedule: typeof IntervalSchedule.Type, window: DateWindow): Array<Date> => {
  const zone = zoneOf(schedule.timezone)
  const days = Math.floor(schedule.interval / 86_400)
  const rest = schedule.interval - days * 86_400
  const advance = (dt: DateTime): DateTime => dt.plus({ days }).plus({ seconds: rest }) as DateTime
  const anchor = luxon().DateTime.fromJSDate(schedule.anchor_date ?? new Date(Date.UTC(2020, 0, 1)), { zone })
  const start = luxon().DateTime.fromJSDate(window.start, { zone })
  // Jump close to the start, then step: the jump uses the average interval, the steps the calendar.
  const jumps = Math.floor((start.toMillis() - anchor.toMillis()) / (schedule.interval * 1000))
  // In either direction: a start long before the anchor must not be walked back to one interval at a time.
  let next: DateTime = jumps !== 0 ? anchor.plus({ seconds: schedule.interval * jumps }) : anchor
  // A few steps at most after the jump; an interval too small to move a millisecond moves nothing.
  for (let i = 0; i <= MAX_ITERATIONS && next > start; i++) next = next.minus({ days }).minus({ seconds: rest }) as DateTime
  for (let i = 0; i <= MAX_ITERATIONS && next < start; i++) next = advance(next)
  const dates: Array<Date> = []
  const n = countOf(window)
  for (let i = 0; i <= MAX_ITERATIONS && dates.length < n; i++) {
    // Past the last date there is (an interval of millions of years): no more dates.
    if (!next.isValid) break
    if (window.end && next.toJSDate() > window.end) break
    if (dates.length === 0 || dates[dates.length - 1]!.getTime() !== next.toMillis()) dates.push(next.toJSDate())
    next = advance(next)
  }
  return dates
}

/** Cron dates in the schedule's time zone; with `day_or` false a date must match both day fields. */
const cronDates = (schedule: typeof CronSchedule.Type, window: DateWindow): Array<Date> => {
  const zone = zoneOf(schedule.timezone)
  // The reference starts one second early, so a date exactly at `start` is included.
  const expression = cronParser().CronExpressionParser.parse(schedule.cron, {
    currentDate: new Date(window.start.getTime() - 1000),
    tz: zone
  })
  const fields = expression.fields
  const restrictsBoth = !fields.dayOfMonth.isWildcard && !fields.dayOfWeek.isWildcard
  const matchesBoth = (date: Date) => {
    const local = luxon().DateTime.fromJSDate(date, { zone })
    const weekday = local.weekday % 7
    return (fields.dayOfMonth.values as ReadonlyArray<number | string>).includes(local.day) &&
      (fields.dayOfWeek.values as ReadonlyArray<number | string>).some((d) => Number(d) % 7 === weekday)
  }
  const dates: Array<Date> = []
  const n = countOf(window)
  for (let i = 0; i <= MAX_ITERATIONS && dates.length < n; i++) {
    let next: Date
    try {
      next = expression.next().toDate()
    } catch {
      break
    }
    if (window.end && next > window.end) break
    if (!schedule.day_or && restrictsBoth && !matchesBoth(next)) continue
    dates.push(next)
  }
  return dates
}

/**
 * RRule dates: the rule's wall-clock times are read in the schedule's time zone (rrule computes in
 * "floating" UTC; luxon places each result in the zone).
 */
const rruleDates = (schedule: typeof RRuleSchedule.Type, window: DateWindow): Array<Date> => {
  const zone = zoneOf(schedule.timezone)
  const hasStart = /DTSTART/i.test(schedule.rrule)
  const floating = (dt: DateTime) => new Date(Date.UTC(dt.year, dt.month - 1, dt.day, dt.hour, dt.minute, dt.second))
  const fromFloating = (d: Date) =>
    luxon().DateTime.fromObject(
      {
        year: d.getUTCFullYear(),
        month: d.getUTCMonth() + 1,
        day: d.getUTCDate(),
        hour: d.getUTCHours(),
        minute: d.getUTCMinutes(),
        second: d.getUTCSeconds()
      },
      { zone }
    ).toJSDate()
  // Without its own DTSTART a rule starts 2020-01-01, as the reference anchors it (rrule would take "now").
  const text = hasStart
    ? schedule.rrule
    : `DTSTART:20200101T000000Z\n${/^\s*(RRULE|EXRULE|RDATE|EXDATE)/i.test(schedule.rrule) ? schedule.rrule : `RRULE:${schedule.rrule}`}`
  const from = floating(luxon().DateTime.fromJSDate(window.start, { zone }))
  const set = rebased(rrule().rrulestr(text, { forceset: true }) as RRuleSet, from)
  const dates: Array<Date> = []
  const n = countOf(window)
  let steps = 0
  // One walk over the rule's dates in order (rrule walks from DTSTART whatever is asked).
  set.all((next) => {
    if (++steps > MAX_RRULE_STEPS) return false
    if (next < from) return true
    const actual = fromFloating(next)
    if (window.end && actual > window.end) return false
    dates.push(actual)
    return dates.length < n
  })
  return dates
}

/**
 * The most dates of a rule walked to find a window's dates. A rule that cannot be moved closer to
 * the window (below) and starts hundreds of thousands of its periods before it yields none.
 */
const MAX_RRULE_STEPS = 200_000

/** Lengths of the fixed periods (rrule's frequencies SECONDLY … WEEKLY), in milliseconds. */
const fixedPeriodMs = memoize((): Partial<Record<number, number>> => {
  const { RRule } = rrule()
  return {
    [RRule.WEEKLY]: 7 * 86_400_000,
    [RRule.DAILY]: 86_400_000,
    [RRule.HOURLY]: 3_600_000,
    [RRule.MINUTELY]: 60_000,
    [RRule.SECONDLY]: 1000
  }
})

/**
 * The set with each rule's DTSTART moved forward by whole periods to just before `from`, which
 * leaves the dates it yields from there unchanged (rules walk in floating time, without DST), so a
 * window years after DTSTART is not walked to one date at a time. Rules counted from their start
 * (COUNT), and sets with exclusion rules, are left as they are.
 */
const rebased = (set: RRuleSet, from: Date): RRuleSet => {
  const { RRule, RRuleSet } = rrule()
  if (set.exrules().length > 0) return set
  const rules = set.rrules() as Array<RRule>
  const moved = rules.map((rule) => {
    const options = rule.options
    const start = options.dtstart
    if (options.count !== null || start === null || start >= from) return rule
    const interval = options.interval || 1
    let dtstart: Date | undefined
    const period = fixedPeriodMs()[options.freq]
    if (period !== undefined) {
      const periods = Math.floor((from.getTime() - start.getTime()) / (period * interval)) - 1
      if (periods > 0) dtstart = new Date(start.getTime() + periods * period * interval)
    } else if (start.getUTCDate() <= 28 && !(start.getUTCMonth() === 1 && start.getUTCDate() === 29)) {
      // Months and years by the calendar; a start on the 29th–31st would be clamped in short months.
      const months = (from.getUTCFullYear() - start.getUTCFullYear()) * 12 + from.getUTCMonth() - start.getUTCMonth()
      const unit = options.freq === RRule.YEARLY ? 12 * interval : interval
      const steps = Math.floor(months / unit) - 1
      if (steps > 0) {
        dtstart = new Date(start.getTime())
        dtstart.setUTCMonth(dtstart.getUTCMonth() + steps * unit)
      }
    }
    return dtstart === undefined ? rule : new RRule({ ...rule.origOptions, dtstart })
  })
  if (moved.every((rule, i) => rule === rules[i])) return set
  const copy = new RRuleSet()
  for (const rule of moved) copy.rrule(rule)
  for (const date of set.rdates()) copy.rdate(date)
  for (const date of set.exdates()) copy.exdate(date)
  return copy
}

/** The next dates of `schedule` from `window.start`, sorted. */
export const nextDates = (schedule: Schedule, window: DateWindow): Array<Date> => {
  if ("interval" in schedule) return intervalDates(schedule, window)
  if ("cron" in schedule) return cronDates(schedule, window)
  return rruleDates(schedule, window)
}

/** Decodes a schedule object, for callers that validate before storing. */
export const decodeSchedule = (input: unknown) =>
  Either.mapLeft(Schema.decodeUnknownEither(Schedule, { errors: "all" })(input), (error) =>
    ParseResult.TreeFormatter.formatErrorSync(error)
  )
