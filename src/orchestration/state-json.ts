/**
 * A stored state as PostgreSQL writes its JSON: the object `stateWire(toState(row))`
 * (src/domain/state-wire.ts) gives, key for key, for a page of runs whose JSON the database writes
 * whole (src/flow-runs/page-json.ts). Details keep what Baton stored (it stores them complete, as
 * `stateDetailsWire` encodes them); a key missing from older details gets the schema's default.
 */

/** An ISO 8601 UTC timestamp as `Date.prototype.toISOString` writes it (to the millisecond, truncated as `pg` reads it). */
export const isoTimeSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** The details' times, written again to the millisecond as reading them into a Date does. */
const DETAIL_TIMES = new Set(["scheduled_time", "cache_expiration", "pause_timeout"])

/** The details' keys in `stateDetailsWire`'s order, with the schema's default for a missing key. */
const DETAILS: ReadonlyArray<readonly [string, string]> = [
  ["flow_run_id", "null"],
  ["task_run_id", "null"],
  ["child_flow_run_id", "null"],
  ["scheduled_time", "null"],
  ["cache_key", "null"],
  ["cache_expiration", "null"],
  ["deferred", "false"],
  ["untrackable_result", "false"],
  ["pause_timeout", "null"],
  ["pause_reschedule", "false"],
  ["pause_key", "null"],
  ["run_input_keyset", "null"],
  ["refresh_cache", "null"],
  ["retriable", "null"],
  ["transition_id", "null"],
  ["task_parameters_id", "null"],
  ["traceparent", "null"],
  ["deployment_concurrency_lease_id", "null"]
]

/** The JSON of the state row `s` (a table alias), or null when the join found none. */
export const stateJsonSql = (s: string) => {
  const details = `coalesce(${s}.state_details, '{}'::jsonb)`
  const detailPairs = DETAILS.map(([key, fallback]) => {
    const stored = `${details} -> '${key}'`
    const value = DETAIL_TIMES.has(key)
      ? `CASE WHEN jsonb_typeof(${stored}) = 'string' THEN to_jsonb(${isoTimeSql(`(${details} ->> '${key}')::timestamptz`)}) ELSE coalesce(${stored}, 'null'::jsonb) END`
      : `coalesce(${stored}, '${fallback}'::jsonb)`
    return `'${key}', ${value}`
  })
  return `CASE WHEN ${s}.id IS NULL THEN NULL ELSE json_build_object(
    'id', ${s}.id, 'type', ${s}.type, 'name', ${s}.name, 'timestamp', ${isoTimeSql(`${s}.timestamp`)},
    'message', ${s}.message, 'data', ${s}.data, 'state_details', json_build_object(${detailPairs.join(", ")})
  ) END`
}
