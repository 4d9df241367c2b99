/**
 * The answer to a request that failed because the database is unavailable (see
 * `unavailability` in database/errors.ts): 503 with a Retry-After header and a JSON body saying so,
 * instead of a 500. The reference answers such failures 503 too (its `is_client_retryable_exception`);
 * its clients retry a 503, honouring Retry-After.
 *
 * Logged as one warning per 10 seconds at most; with `server.log_retryable_errors`, each such
 * failure is logged as an error with its trace, as the reference does with that setting.
 */
import { HttpServerResponse } from "@effect/platform"
import { Cause, Clock, Effect, Option } from "effect"
import { unavailability, type Unavailability, unavailabilityReason } from "../database/errors.ts"
import type { SettingsValue } from "../settings/settings.ts"
import { safeError } from "./log-safe.ts"

/** Seconds a client is asked to wait before trying again. */
export const RETRY_AFTER_SECONDS = 5

const details: Record<Unavailability, string> = {
  unreachable: "The database is unavailable. Try again shortly.",
  busy: "The database could not complete the request in time. Try again shortly."
}

const answers: Record<Unavailability, HttpServerResponse.HttpServerResponse> = {
  unreachable: HttpServerResponse.unsafeJson(
    { detail: details.unreachable, exception_message: "Service Unavailable" },
    { status: 503, headers: { "retry-after": String(RETRY_AFTER_SECONDS) } }
  ),
  busy: HttpServerResponse.unsafeJson(
    { detail: details.busy, exception_message: "Service Unavailable" },
    { status: 503, headers: { "retry-after": String(RETRY_AFTER_SECONDS) } }
  )
}

/** One warning per this many milliseconds at most: an outage under load would otherwise log every request. */
const WARN_EVERY_MS = 10_000
let lastWarning = Number.NEGATIVE_INFINITY
let unwarned = 0

const warn = (kind: Unavailability, error: unknown) =>
  Effect.flatMap(Clock.currentTimeMillis, (at) => {
    unwarned += 1
    if (at - lastWarning < WARN_EVERY_MS) return Effect.logDebug(`Answered 503: ${unavailabilityReason(error)}`)
    const count = unwarned
    lastWarning = at
    unwarned = 0
    return Effect.logWarning(
      `${kind === "busy" ? "The database could not complete a request in time" : "The database is unavailable"}: ${
        unavailabilityReason(error)
      }; answering 503 (${count} request(s) since the last such message)`
    )
  })

/** Each retryable failure as an error with its trace (without request values: log-safe.ts). */
const logEach = (error: unknown) =>
  Effect.logError(
    `Retryable database error while handling a request, answered 503: ${unavailabilityReason(error)}`,
    Cause.die(safeError(error))
  )

/**
 * The 503 answer for a failure or defect `error`, logged as `settings` say, when it says the
 * database is unavailable.
 */
export const unavailableAnswer = (
  settings: SettingsValue,
  error: unknown
): Option.Option<Effect.Effect<HttpServerResponse.HttpServerResponse>> => {
  const kind = unavailability(error)
  if (kind === undefined) return Option.none()
  return Option.some(Effect.as(settings.server.log_retryable_errors ? logEach(error) : warn(kind, error), answers[kind]))
}

/** The same for a whole cause: its first failure or defect that says the database is unavailable. */
export const unavailableAnswerForCause = (
  settings: SettingsValue,
  cause: Cause.Cause<unknown>
): Option.Option<Effect.Effect<HttpServerResponse.HttpServerResponse>> => {
  for (const error of [...Cause.failures(cause), ...Cause.defects(cause)]) {
    const answer = unavailableAnswer(settings, error)
    if (Option.isSome(answer)) return answer
  }
  return Option.none()
}
