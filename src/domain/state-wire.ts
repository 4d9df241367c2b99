/**
 * States and their details as their schemas encode them (`Schema.encodeSync(State)`,
 * `Schema.encodeSync(StateDetails)`), written by hand for the run lifecycle's hot paths: every
 * transition stores its details and answers its state. The value must already be of the type (it
 * is: decoded from a request, or read and decoded from the database).
 */
import type { State, StateDetails } from "./states.ts"

const time = (date: Date | null) => (date === null ? null : date.toISOString())

/** A state's details, encoded. */
export const stateDetailsWire = (d: StateDetails) => ({
  flow_run_id: d.flow_run_id,
  task_run_id: d.task_run_id,
  child_flow_run_id: d.child_flow_run_id,
  scheduled_time: time(d.scheduled_time),
  cache_key: d.cache_key,
  cache_expiration: time(d.cache_expiration),
  deferred: d.deferred,
  untrackable_result: d.untrackable_result,
  pause_timeout: time(d.pause_timeout),
  pause_reschedule: d.pause_reschedule,
  pause_key: d.pause_key,
  run_input_keyset: d.run_input_keyset,
  refresh_cache: d.refresh_cache,
  retriable: d.retriable,
  transition_id: d.transition_id,
  task_parameters_id: d.task_parameters_id,
  traceparent: d.traceparent,
  deployment_concurrency_lease_id: d.deployment_concurrency_lease_id
})

/** A state, encoded. */
export const stateWire = (state: State) => ({
  id: state.id,
  type: state.type,
  name: state.name,
  timestamp: state.timestamp.toISOString(),
  message: state.message,
  data: state.data,
  state_details: stateDetailsWire(state.state_details)
})
