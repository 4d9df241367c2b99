import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { decodeSchedule, nextDates, Schedule } from "../../src/deployments/schedules.ts"

const schedule = (input: unknown) => Schema.decodeUnknownSync(Schedule)(input)
const iso = (dates: ReadonlyArray<Date>) => dates.map((d) => d.toISOString())
const at = (text: string) => new Date(text)

describe("schedules", () => {
  it("interval: every hour from the anchor, the first at or after the start", () => {
    const s = schedule({ interval: 3600, anchor_date: "2020-01-01T00:00:00Z" })
    expect(iso(nextDates(s, { n: 3, start: at("2026-03-01T00:30:00Z") }))).toEqual([
      "2026-03-01T01:00:00.000Z",
      "2026-03-01T02:00:00.000Z",
      "2026-03-01T03:00:00.000Z"
    ])
    expect(iso(nextDates(s, { n: 1, start: at("2026-03-01T01:00:00Z") }))).toEqual(["2026-03-01T01:00:00.000Z"])
  })

  it("interval: a daily run keeps its wall-clock time across a DST change", () => {
    const s = schedule({ interval: 86400, anchor_date: "2026-01-01T14:00:00Z", timezone: "America/New_York" })
    // 09:00 in New York: 14:00Z before the change on 2026-03-08, 13:00Z after.
    expect(iso(nextDates(s, { n: 3, start: at("2026-03-07T00:00:00Z") }))).toEqual([
      "2026-03-07T14:00:00.000Z",
      "2026-03-08T13:00:00.000Z",
      "2026-03-09T13:00:00.000Z"
    ])
  })

  it("interval: sub-day intervals are elapsed time, also across a DST change", () => {
    const s = schedule({ interval: 3600, anchor_date: "2026-03-08T05:00:00Z", timezone: "America/New_York" })
    const dates = nextDates(s, { n: 4, start: at("2026-03-08T05:30:00Z") })
    expect(dates.slice(1).map((d, i) => d.getTime() - dates[i]!.getTime())).toEqual([3600_000, 3600_000, 3600_000])
  })

  it("interval: bounded by end and by n", () => {
    const s = schedule({ interval: 60, anchor_date: "2026-01-01T00:00:00Z" })
    expect(nextDates(s, { start: at("2026-01-01T00:00:00Z"), end: at("2026-01-01T00:10:00Z") })).toHaveLength(11)
    expect(nextDates(s, { start: at("2026-01-01T00:00:00Z"), end: at("2027-01-01T00:00:00Z") })).toHaveLength(1000)
    expect(nextDates(s, { start: at("2026-01-01T00:00:00Z") })).toHaveLength(1)
  })

  it("interval: a start long before the anchor jumps there instead of stepping back one interval at a time", () => {
    const s = schedule({ interval: 3600, anchor_date: "2026-01-01T00:00:00Z" })
    const started = Date.now()
    expect(iso(nextDates(s, { n: 2, start: at("0001-01-01T00:30:00Z") }))).toEqual([
      "0001-01-01T01:00:00.000Z",
      "0001-01-01T02:00:00.000Z"
    ])
    // Two billion hours back were once walked one by one.
    expect(Date.now() - started).toBeLessThan(1_000)
  })

  it("interval: one too small to move a millisecond, or too large for any date, ends", () => {
    const tiny = schedule({ interval: 1e-9, anchor_date: "2026-01-01T00:00:00Z" })
    expect(nextDates(tiny, { n: 5, start: at("2026-01-01T00:00:00.5Z") }).length).toBeLessThanOrEqual(5)
    const huge = schedule({ interval: 1e300, anchor_date: "2026-01-01T00:00:00Z" })
    const dates = nextDates(huge, { n: 5, start: at("2026-01-02T00:00:00Z") })
    expect(dates.every((d) => !Number.isNaN(d.getTime()))).toBe(true)
  })

  it("cron: in its time zone across a DST change, including a date exactly at the start", () => {
    const s = schedule({ cron: "0 9 * * *", timezone: "America/New_York" })
    expect(iso(nextDates(s, { n: 3, start: at("2026-03-07T14:00:00Z") }))).toEqual([
      "2026-03-07T14:00:00.000Z",
      "2026-03-08T13:00:00.000Z",
      "2026-03-09T13:00:00.000Z"
    ])
  })

  it("cron: day_or chooses whether day-of-month and day-of-week are alternatives or both required", () => {
    const or = schedule({ cron: "0 0 1-3 * 1", timezone: "UTC" })
    const and = schedule({ cron: "0 0 1-3 * 1", timezone: "UTC", day_or: false })
    const start = at("2026-06-01T00:00:00Z") // a Monday
    expect(iso(nextDates(or, { n: 4, start }))).toEqual([
      "2026-06-01T00:00:00.000Z",
      "2026-06-02T00:00:00.000Z",
      "2026-06-03T00:00:00.000Z",
      "2026-06-08T00:00:00.000Z"
    ])
    // Mondays that are also among the first three days of the month.
    expect(iso(nextDates(and, { n: 2, start }))).toEqual(["2026-06-01T00:00:00.000Z", "2026-08-03T00:00:00.000Z"])
  })

  it("rrule: wall-clock times in the schedule's time zone across a DST change", () => {
    const s = schedule({ rrule: "FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0", timezone: "Europe/Berlin" })
    // 09:00 in Berlin: 08:00Z before 2026-03-29, 07:00Z after.
    expect(iso(nextDates(s, { n: 3, start: at("2026-03-28T00:00:00Z") }))).toEqual([
      "2026-03-28T08:00:00.000Z",
      "2026-03-29T07:00:00.000Z",
      "2026-03-30T07:00:00.000Z"
    ])
    const counted = schedule({ rrule: "DTSTART:20260101T000000Z\nRRULE:FREQ=WEEKLY;COUNT=2", timezone: "UTC" })
    expect(iso(nextDates(counted, { n: 5, start: at("2025-12-01T00:00:00Z") }))).toEqual([
      "2026-01-01T00:00:00.000Z",
      "2026-01-08T00:00:00.000Z"
    ])
  })

  it("rrule: a window centuries after the rule's start, without walking there", () => {
    // Every 6 hours from midnight in New York (UTC-5 in January): 05, 11, 17 and 23 UTC.
    const hourly = schedule({ rrule: "FREQ=HOURLY;INTERVAL=6", timezone: "America/New_York" })
    const started = Date.now()
    expect(iso(nextDates(hourly, { n: 4, start: at("2500-01-01T03:00:00Z") }))).toEqual([
      "2500-01-01T05:00:00.000Z",
      "2500-01-01T11:00:00.000Z",
      "2500-01-01T17:00:00.000Z",
      "2500-01-01T23:00:00.000Z"
    ])
    // The 1st and 15th of each month, from a start given in the rule; the last Friday of a month.
    const twiceMonthly = schedule({ rrule: "DTSTART:20210115T101500\nRRULE:FREQ=MONTHLY;BYMONTHDAY=1,15", timezone: "UTC" })
    expect(iso(nextDates(twiceMonthly, { n: 3, start: at("7471-04-08T00:00:00Z") }))).toEqual([
      "7471-04-15T10:15:00.000Z",
      "7471-05-01T10:15:00.000Z",
      "7471-05-15T10:15:00.000Z"
    ])
    const lastFriday = schedule({ rrule: "FREQ=MONTHLY;BYDAY=-1FR", timezone: "UTC" })
    expect(iso(nextDates(lastFriday, { n: 2, start: at("2900-02-01T00:00:00Z") }))).toEqual([
      "2900-02-26T00:00:00.000Z",
      "2900-03-26T00:00:00.000Z"
    ])
    // Walking there one date at a time took seconds to minutes.
    expect(Date.now() - started).toBeLessThan(2000)
  })

  it("rejects bad expressions, time zones and intervals", () => {
    expect(Either.isLeft(decodeSchedule({ cron: "61 * * * *" }))).toBe(true)
    // Five to seven columns, as the reference's croniter takes them.
    expect(Either.isLeft(decodeSchedule({ cron: "* * *" }))).toBe(true)
    expect(Either.isRight(decodeSchedule({ cron: "0 0 * * * 0" }))).toBe(true)
    expect(Either.isLeft(decodeSchedule({ cron: "0 9 * * *", timezone: "Mars/Olympus" }))).toBe(true)
    expect(Either.isLeft(decodeSchedule({ rrule: "FREQ=SOMETIMES" }))).toBe(true)
    expect(Either.isLeft(decodeSchedule({ interval: 0 }))).toBe(true)
    expect(Either.isLeft(decodeSchedule({ interval: 60, cron: "* * * * *" }))).toBe(true)
    expect(Either.isRight(decodeSchedule({ cron: "*/5 * * * *" }))).toBe(true)
  })
})
