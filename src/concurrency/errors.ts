/** The concurrency area's domain errors, with the reference's status and body. */
import { Schema } from "effect"
import { fixedDetail, httpError, INTEGRITY_CONFLICT } from "../domain/errors.ts"

/** A global (v2) concurrency limit, by id or name, that does not exist. */
export class ConcurrencyLimitNotFound extends Schema.TaggedError<ConcurrencyLimitNotFound>()("ConcurrencyLimitNotFound", {
  detail: fixedDetail("Concurrency Limit not found")
}) {}

/** A tag (v1) concurrency limit that does not exist. */
export class TagConcurrencyLimitNotFound extends Schema.TaggedError<TagConcurrencyLimitNotFound>()("TagConcurrencyLimitNotFound", {
  detail: fixedDetail("Concurrency limit not found")
}) {}

/** Another limit has the name (the reference answers its integrity conflict). */
export class ConcurrencyLimitNameTaken extends Schema.TaggedError<ConcurrencyLimitNameTaken>()("ConcurrencyLimitNameTaken", {
  detail: fixedDetail(INTEGRITY_CONFLICT)
}) {}

/** A lease to renew that expired or was revoked. */
export class ConcurrencyLeaseGone extends Schema.TaggedError<ConcurrencyLeaseGone>()("ConcurrencyLeaseGone", {
  detail: fixedDetail("Lease not found - it may have expired or been revoked")
}) {}

export const ConcurrencyLimitNotFoundResponse = httpError(ConcurrencyLimitNotFound, 404, { identifier: "ConcurrencyLimitNotFound" })
export const TagConcurrencyLimitNotFoundResponse = httpError(TagConcurrencyLimitNotFound, 404, { identifier: "TagConcurrencyLimitNotFound" })
export const ConcurrencyLimitNameTakenResponse = httpError(ConcurrencyLimitNameTaken, 409, { identifier: "ConcurrencyLimitNameTaken" })
export const ConcurrencyLeaseGoneResponse = httpError(ConcurrencyLeaseGone, 410, { identifier: "ConcurrencyLeaseGone" })
