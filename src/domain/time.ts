/** Timestamps on the wire: ISO 8601 strings, serialised in UTC ("2026-11-22T10:00:00.000Z"). */
import { Clock, Effect, Schema } from "effect"
import { DateTime } from "luxon"

export const Timestamp = Schema.Date.annotations({ identifier: "DateTime" })

/** The Clock's current time as a Date, to pass into SQL ("now" never comes from the database). */
export const now: Effect.Effect<Date> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

/**
 * A date as Python prints it (`2026-03-01 09:00:00+01:00`, microseconds only when non-zero), which
 * clients meet in keys and files the reference writes.
 */
export const pythonDate = (date: Date, timezone: string | null | undefined = "UTC"): string => {
  const local = DateTime.fromJSDate(date, { zone: timezone ?? "UTC" })
  const fraction = local.millisecond === 0 ? "" : `.${String(local.millisecond * 1000).padStart(6, "0")}`
  return `${local.toFormat("yyyy-MM-dd HH:mm:ss")}${fraction}${local.toFormat("ZZ")}`
}
