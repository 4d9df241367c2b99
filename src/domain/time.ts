/** Timestamps on the wire: ISO 8601 strings, serialised in UTC ("2026-11-22T10:00:00.000Z"). */
import { Clock, Effect, Schema } from "effect"

export const Timestamp = Schema.Date.annotations({ identifier: "DateTime" })

/** The Clock's current time as a Date, to pass into SQL ("now" never comes from the database). */
export const now: Effect.Effect<Date> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
