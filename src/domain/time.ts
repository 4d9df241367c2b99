/** Timestamps on the wire: ISO 8601 strings, serialised in UTC ("2026-11-22T10:00:00.000Z"). */
import { Clock, Effect, ParseResult, Schema } from "effect"
import { onFirstUse } from "./on-first-use.ts"

// Loaded when a date is first written in a time zone (on-first-use.ts).
const luxon = onFirstUse<typeof import("luxon")>("luxon")

/** The first and last instants the reference accepts (Python's datetime: years 1 to 9999). */
export const EARLIEST = new Date("0001-01-01T00:00:00.000Z")
export const LATEST = new Date("9999-12-31T23:59:59.999Z")

/** The instant `millis`, or the last one a timestamp can hold if it is later (a bucket past year 9999). */
export const notAfterLatest = (millis: number) => new Date(Math.min(millis, LATEST.getTime()))

/**
 * An ISO 8601 timestamp. A date outside years 1 to 9999 is refused when decoded (the reference
 * cannot parse one, and such dates overflow the arithmetic and the database columns they feed);
 * encoding is not checked, so a date the server computed past that range is still answered.
 */
export const Timestamp = Schema.transformOrFail(Schema.Date, Schema.DateFromSelf, {
  strict: true,
  decode: (date, _, ast) =>
    date >= EARLIEST && date <= LATEST
      ? ParseResult.succeed(date)
      : ParseResult.fail(new ParseResult.Type(ast, date, "Input should be a valid datetime, year is out of range")),
  encode: ParseResult.succeed
}).annotations({
  identifier: "DateTime",
  arbitrary: () => (fc) => fc.date({ min: EARLIEST, max: LATEST, noInvalidDate: true })
})

/**
 * The machine's clock, whatever Clock the program runs with. For what paces a connection or notices
 * one lost (heartbeats, send spacing): those are about real time, never about the runs' schedule, so
 * a test clock moved hours ahead must not replay them thousands of times.
 */
export const realClock: Clock.Clock = Clock.make()

/**
 * The Clock's current time as a Date, to pass into SQL ("now" never comes from the database); read
 * in one step, as `newId` reads it (./ids.ts).
 */
export const now: Effect.Effect<Date> = Effect.clockWith((clock) => Effect.sync(() => new Date(clock.unsafeCurrentTimeMillis())))

/**
 * A date as Python prints it (`2026-03-01 09:00:00+01:00`, microseconds only when non-zero), which
 * clients meet in keys and files the reference writes.
 */
export const pythonDate = (date: Date, timezone: string | null | undefined = "UTC"): string => {
  const local = luxon().DateTime.fromJSDate(date, { zone: timezone ?? "UTC" })
  const fraction = local.millisecond === 0 ? "" : `.${String(local.millisecond * 1000).padStart(6, "0")}`
  return `${local.toFormat("yyyy-MM-dd HH:mm:ss")}${fraction}${local.toFormat("ZZ")}`
}
