/** Work pools and queues on the wire, as the reference has them. */
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { Timestamp } from "../domain/time.ts"

export const QueueFilter = Schema.Struct({
  tags: Schema.optionalWith(Schema.NullOr(Schema.Array(Schema.String)), { default: () => null }),
  deployment_ids: Schema.optionalWith(Schema.NullOr(Schema.Array(Id)), { default: () => null })
}).annotations({ identifier: "QueueFilter" })

/** A work queue as the reference's core model has it (no status, no pool name). */
export const WorkQueue = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  is_paused: Schema.Boolean,
  concurrency_limit: Schema.NullOr(Schema.Int),
  priority: Schema.Int,
  work_pool_id: Schema.NullOr(Id),
  filter: Schema.NullOr(QueueFilter),
  last_polled: Schema.NullOr(Timestamp)
}).annotations({ identifier: "WorkQueue" })
export type WorkQueue = typeof WorkQueue.Type
