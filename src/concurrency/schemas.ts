/** Concurrency limits on the wire: global (v2) limits, tag (v1) limits, leases, as the reference has them. */
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { LimitField, OffsetField } from "../domain/pagination.ts"
import { ObjectName, strictBody } from "../domain/schemas.ts"
import { Timestamp } from "../domain/time.ts"
import * as Lax from "../domain/lax.ts"

const NonNegativeInt = Lax.int({ ge: 0 })
/**
 * Slots freed a second. Bounded so that the decay (rate × seconds since the last change) stays a
 * finite number however long a limit sits unchanged; a billion a second frees any limit at once.
 */
export const MAX_SLOT_DECAY_PER_SECOND = 1_000_000_000
const SlotDecay = Lax.float({ ge: 0, le: MAX_SLOT_DECAY_PER_SECOND })
const PositiveInt = Lax.int({ gt: 0 })

export const ConcurrencyLimitV2Create = strictBody(
  {
    name: ObjectName,
    limit: NonNegativeInt,
    active: Schema.optionalWith(Lax.Bool, { default: () => true }),
    active_slots: Schema.optionalWith(NonNegativeInt, { default: () => 0 }),
    denied_slots: Schema.optionalWith(NonNegativeInt, { default: () => 0 }),
    slot_decay_per_second: Schema.optionalWith(SlotDecay, { default: () => 0 })
  },
  "ConcurrencyLimitV2Create"
)

/** Every field optional; only the given ones change (null is refused: no column takes it). */
export const ConcurrencyLimitV2Update = strictBody(
  {
    name: Schema.optional(ObjectName),
    limit: Schema.optional(NonNegativeInt),
    active: Schema.optional(Lax.Bool),
    active_slots: Schema.optional(NonNegativeInt),
    denied_slots: Schema.optional(NonNegativeInt),
    slot_decay_per_second: Schema.optional(SlotDecay)
  },
  "ConcurrencyLimitV2Update"
)

/** A global limit as read: its active slots after decay. */
export const GlobalConcurrencyLimit = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  active: Schema.Boolean,
  name: Schema.String,
  limit: Schema.Int,
  active_slots: Schema.Int,
  slot_decay_per_second: Schema.Number
}).annotations({ identifier: "GlobalConcurrencyLimitResponse" })

/** The record a create answers: the stored values. */
export const ConcurrencyLimitV2 = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  active: Schema.Boolean,
  name: Schema.String,
  limit: Schema.Int,
  active_slots: Schema.Int,
  denied_slots: Schema.Int,
  slot_decay_per_second: Schema.Number,
  avg_slot_occupancy_seconds: Schema.Number
}).annotations({ identifier: "ConcurrencyLimitV2" })

export const MinimalConcurrencyLimit = Schema.Struct({ id: Id, name: Schema.String, limit: Schema.Int }).annotations({
  identifier: "MinimalConcurrencyLimitResponse"
})

export const ConcurrencyLimitWithLease = Schema.Struct({
  lease_id: Id,
  limits: Schema.Array(MinimalConcurrencyLimit)
}).annotations({ identifier: "ConcurrencyLimitWithLeaseResponse" })

export const LeaseHolder = strictBody(
  { type: Schema.Literal("flow_run", "task_run", "deployment"), id: Id },
  "ConcurrencyLeaseHolder"
)

/** The limits a slot operation names: at least one, as the reference requires. */
const Names = Schema.Array(Schema.String).pipe(Schema.minItems(1))

const Mode = Schema.optionalWith(Schema.Literal("concurrency", "rate_limit"), { default: () => "concurrency" as const })

export const IncrementBody = Schema.Struct({
  slots: PositiveInt,
  names: Names,
  mode: Mode,
  create_if_missing: Schema.optional(Schema.NullOr(Lax.Bool))
})

export const IncrementWithLeaseBody = Schema.Struct({
  slots: PositiveInt,
  names: Names,
  mode: Mode,
  lease_duration: Schema.optionalWith(Lax.float({ ge: 60, le: 86_400 }), { default: () => 300 }),
  holder: Schema.optional(Schema.NullOr(LeaseHolder))
})

export const DecrementBody = Schema.Struct({
  slots: PositiveInt,
  names: Names,
  occupancy_seconds: Schema.optional(Schema.NullOr(Lax.float({ gt: 0 }))),
  create_if_missing: Schema.optional(Schema.NullOr(Lax.Bool))
})

export const DecrementWithLeaseBody = Schema.Struct({ lease_id: Id })

export const RenewLeaseBody = Schema.Struct({
  lease_duration: Schema.optionalWith(Lax.float({ ge: 60, le: 86_400 }), { default: () => 300 })
})

export const PageBody = Schema.Struct({ offset: OffsetField, limit: LimitField })

/** A tag limit (v1), kept as the global limit named `tag:<tag>`. */
export const ConcurrencyLimit = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  tag: Schema.String,
  concurrency_limit: Schema.Int,
  active_slots: Schema.Array(Id)
}).annotations({ identifier: "ConcurrencyLimit" })

export const ConcurrencyLimitCreate = strictBody(
  { tag: ObjectName, concurrency_limit: NonNegativeInt },
  "ConcurrencyLimitCreate"
)

export const ResetBody = Schema.Struct({ slot_override: Schema.optional(Schema.NullOr(Schema.Array(Id))) })

export const TagSlotsBody = Schema.Struct({ names: Schema.Array(Schema.String), task_run_id: Id })
