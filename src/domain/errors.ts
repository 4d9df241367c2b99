/**
 * The errors areas and the domain fail with, each carrying the reference's `detail`. Their status
 * and wire body are given once, in src/http/errors.ts, where the Api declares them.
 */
import { Schema } from "effect"
import { ValidationDetailItem } from "./problems.ts"

/**
 * `detail` is either the reference's list of field problems or, for rules a handler checks itself
 * (e.g. "Invalid limit: must be less than or equal to 200."), a plain message.
 */
export const ValidationDetail = Schema.Union(Schema.Array(ValidationDetailItem), Schema.String)

export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  detail: ValidationDetail
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { detail: Schema.String }) {}

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", { detail: Schema.String }) {}

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", { detail: Schema.String }) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", { detail: Schema.String }) {}

export class Gone extends Schema.TaggedError<Gone>()("Gone", { detail: Schema.String }) {}

/** A concurrency limit is full (answered with Retry-After by the handlers that take slots). */
export class Locked extends Schema.TaggedError<Locked>()("Locked", { detail: Schema.String }) {}

/** The reference's answer when a write names an object that does not exist or breaks a unique key. */
export const integrityConflict = () =>
  new Conflict({
    detail:
      "Data integrity conflict. This usually means a unique or foreign key constraint was violated. See server logs for details."
  })
