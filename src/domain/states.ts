/** Run states as the reference models them: a type, a display name, a timestamp and details. */
import { Schema } from "effect"
import { Id } from "./ids.ts"
import { nullable } from "./schemas.ts"
import { Timestamp } from "./time.ts"
import * as Lax from "./lax.ts"

export const StateType = Schema.Literal(
  "SCHEDULED",
  "PENDING",
  "RUNNING",
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "CRASHED",
  "PAUSED",
  "CANCELLING"
).annotations({ identifier: "StateType" })
export type StateType = typeof StateType.Type

/** The name a state gets when none is given. */
export const defaultStateName: Record<StateType, string> = {
  SCHEDULED: "Scheduled",
  PENDING: "Pending",
  RUNNING: "Running",
  COMPLETED: "Completed",
  FAILED: "Failed",
  CANCELLED: "Cancelled",
  CRASHED: "Crashed",
  PAUSED: "Paused",
  CANCELLING: "Cancelling"
}

const TERMINAL: ReadonlySet<StateType> = new Set(["COMPLETED", "FAILED", "CANCELLED", "CRASHED"])

/** Terminal ("final") states: a run that reached one has ended. */
export const isFinal = (type: StateType | null | undefined): boolean => type != null && TERMINAL.has(type)

export const StateDetails = Schema.Struct({
  flow_run_id: nullable(Id),
  task_run_id: nullable(Id),
  child_flow_run_id: nullable(Id),
  scheduled_time: nullable(Timestamp),
  cache_key: nullable(Schema.String),
  cache_expiration: nullable(Timestamp),
  deferred: Schema.optionalWith(Schema.NullOr(Lax.Bool), { default: () => false }),
  untrackable_result: Schema.optionalWith(Lax.Bool, { default: () => false }),
  pause_timeout: nullable(Timestamp),
  pause_reschedule: Schema.optionalWith(Lax.Bool, { default: () => false }),
  pause_key: nullable(Schema.String),
  run_input_keyset: nullable(Schema.Record({ key: Schema.String, value: Schema.String })),
  refresh_cache: nullable(Lax.Bool),
  retriable: nullable(Lax.Bool),
  transition_id: nullable(Id),
  task_parameters_id: nullable(Id),
  traceparent: nullable(Schema.String),
  deployment_concurrency_lease_id: nullable(Id)
}).annotations({ identifier: "StateDetails" })
export type StateDetails = typeof StateDetails.Type

export const emptyStateDetails: StateDetails = Schema.decodeSync(StateDetails)({})

/** A state as stored and answered. */
export const State = Schema.Struct({
  id: Id,
  type: StateType,
  name: Schema.NullOr(Schema.String),
  timestamp: Timestamp,
  message: Schema.NullOr(Schema.String),
  data: Schema.optionalWith(Schema.Unknown, { default: () => null }),
  state_details: StateDetails
}).annotations({ identifier: "State" })
export type State = typeof State.Type

/** A state a client proposes (set_state, or the state a run is created in). */
export const StateCreate = Schema.Struct({
  type: StateType,
  name: nullable(Schema.String),
  message: nullable(Schema.String),
  data: Schema.optionalWith(Schema.Unknown, { default: () => null }),
  state_details: Schema.optionalWith(StateDetails, { default: () => emptyStateDetails })
}).annotations({ identifier: "StateCreate", parseOptions: { onExcessProperty: "error" } })
export type StateCreate = typeof StateCreate.Type
