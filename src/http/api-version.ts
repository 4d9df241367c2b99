/**
 * The request's API version header, checked as the reference checks its X-PREFECT-API-VERSION:
 * absent or empty is fine, three integers `x.y.z` at or above the minimum version are fine (no
 * upper bound, no major-version rule), anything else is a 400 in the reference's words. The check
 * belongs to the routes of the Api's areas: the liveness and version probes (marked `Unversioned`)
 * and paths no route takes answer whatever the header says.
 */
import { Context } from "effect"

export const VERSION_HEADER = "x-service-api-version"

/** The oldest API version a client may ask for: the reference's minimum. */
export const MINIMUM_API_VERSION = "0.8.0"

/** Marks an endpoint the version header does not apply to (the reference's /health and /version). */
export class Unversioned extends Context.Tag("baton/http/Unversioned")<Unversioned, true>() {}

/**
 * One part of the version as Python's `int()` reads it (surrounding blanks, a sign, `_` between
 * digits), or undefined when it is no integer.
 */
const integerOf = (part: string): bigint | undefined => {
  const trimmed = part.trim()
  return /^[+-]?\d+(?:_\d+)*$/.test(trimmed) ? BigInt(trimmed.replaceAll("_", "")) : undefined
}

const compare = (a: ReadonlyArray<bigint>, b: ReadonlyArray<bigint>): number => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1
  return 0
}

const MINIMUM = MINIMUM_API_VERSION.split(".").map(BigInt)

/** Why the header's `value` is refused (the 400's detail), or undefined when it is accepted. */
export const versionHeaderProblem = (value: string | undefined): string | undefined => {
  if (value === undefined || value === "") return undefined
  const parts = value.split(".").map(integerOf)
  const name = VERSION_HEADER.toUpperCase()
  if (parts.length !== 3 || parts.some((p) => p === undefined)) {
    // The reference's wording, its missing space included.
    return `Invalid ${name} header format.Expected header in format 'x.y.z' but received ${value}`
  }
  if (compare(parts as ReadonlyArray<bigint>, MINIMUM) < 0) {
    return `The request specified API version ${value} but this server requires version ${MINIMUM_API_VERSION} or higher.`
  }
  return undefined
}
