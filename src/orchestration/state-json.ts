/**
 * A stored state as PostgreSQL writes its JSON: the object `stateWire(toState(row))`
 * (src/domain/state-wire.ts) gives, key for key, for a page of runs whose JSON the database writes
 * whole (src/flow-runs/page-json.ts). Objects are written by `row_to_json` over a select list in the
 * wire's order (compact, and cheaper than `json_build_object`); the details are read with
 * `jsonb_to_record`, their times written again as `toISOString` writes them, and a key missing from
 * older details gets the schema's default.
 */

/** An ISO 8601 UTC timestamp as `Date.prototype.toISOString` writes it (to the millisecond, truncated as `pg` reads it). */
export const isoTimeSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/** A JSON object of the select list `columns` (`expression AS key, …`), its keys in that order. */
export const jsonObjectSql = (columns: string, from = "") => `(SELECT row_to_json(o) FROM (SELECT ${columns} ${from}) o)`

/** A key that may be missing from stored JSON `object`, with the schema's default then (an explicit null stays null). */
export const storedKeySql = (object: string, key: string, fallback: string) =>
  `coalesce(${object} -> '${key}', '${fallback}'::jsonb) AS ${key}`

/** The details as `stateDetailsWire` writes them, from the stored `details` (a jsonb expression). */
const detailsJsonSql = (details: string) =>
  jsonObjectSql(
    `d.flow_run_id, d.task_run_id, d.child_flow_run_id, ${isoTimeSql("d.scheduled_time")} AS scheduled_time, d.cache_key,
    ${isoTimeSql("d.cache_expiration")} AS cache_expiration, ${storedKeySql(details, "deferred", "false")},
    ${storedKeySql(details, "untrackable_result", "false")}, ${isoTimeSql("d.pause_timeout")} AS pause_timeout,
    ${storedKeySql(details, "pause_reschedule", "false")}, d.pause_key, d.run_input_keyset, d.refresh_cache, d.retriable,
    d.transition_id, d.task_parameters_id, d.traceparent, d.deployment_concurrency_lease_id`,
    `FROM jsonb_to_record(${details}) AS d(flow_run_id text, task_run_id text, child_flow_run_id text,
      scheduled_time timestamptz, cache_key text, cache_expiration timestamptz, pause_timeout timestamptz, pause_key text,
      run_input_keyset jsonb, refresh_cache boolean, retriable boolean, transition_id text, task_parameters_id text,
      traceparent text, deployment_concurrency_lease_id text)`
  )

/** The JSON of the state row `s` (a table alias), or null when the join found none. */
export const stateJsonSql = (s: string) =>
  `CASE WHEN ${s}.id IS NULL THEN NULL ELSE ${
    jsonObjectSql(
      `${s}.id, ${s}.type, ${s}.name, ${isoTimeSql(`${s}.timestamp`)} AS "timestamp", ${s}.message, ${s}.data,
      ${detailsJsonSql(`coalesce(${s}.state_details, '{}'::jsonb)`)} AS state_details`
    )
  } END`
