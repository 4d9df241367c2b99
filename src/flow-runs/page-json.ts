/**
 * A flow run's JSON written by PostgreSQL, for `POST /flow_runs/filter`: a page of 200 runs read
 * column by column through `pg` and written again by `JSON.stringify` costs the server several
 * times what the query costs the database (docs/performance.md, "Where a page of 200 runs goes").
 * Here each row comes back as one text value, the object `flowRunWire(toFlowRun(row, at))`
 * (wire.ts, row.ts) gives, key for key, and the page is those values joined: the run-time estimates
 * are worked out in the query as `estimates` (orchestration/global-policy.ts) works them out,
 * timestamps to the millisecond as `pg` reads them. test/flow-runs/queries-at-scale.test.ts holds the
 * two side by side. Numbers and stored JSON keep PostgreSQL's spelling (`1e-05`, jsonb's key order), the same
 * values.
 */
import { isoTimeSql, jsonObjectSql, stateJsonSql, storedKeySql } from "../orchestration/state-json.ts"

/** The policy's keys in `flowRunWire`'s order, with the schema's default for a missing key (as `decodePolicy`). */
const POLICY: ReadonlyArray<readonly [string, string]> = [
  ["max_retries", "0"],
  ["retry_delay_seconds", "0"],
  ["retries", "null"],
  ["retry_delay", "null"],
  ["pause_keys", "[]"],
  ["resuming", "false"],
  ["retry_type", "null"]
]

/** A timestamp as `pg` reads it into a Date: truncated to the millisecond. */
const ms = (column: string) => `date_trunc('milliseconds', ${column})`

/** Seconds between two timestamps, as `(a.getTime() - b.getTime()) / 1000` gives them. */
const secondsBetween = (a: string, b: string) => `((extract(epoch FROM ${a} - ${b}) * 1000)::float8 / 1000)`

/**
 * The JSON text of the run `flow_run` joined with its state `flow_run_state`, its queue `work_queue`
 * and pool `work_pool` (as FlowRunsRepo joins them), estimated at `$at`, the placeholder of the
 * request's time (a timestamptz parameter).
 */
export const flowRunJsonSql = (at: string) => {
  const r = "flow_run"
  const policy = `coalesce(${r}.empirical_policy, '{}'::jsonb)`
  const running = `CASE WHEN ${r}.state_type = 'RUNNING' AND ${r}.state_timestamp IS NOT NULL
    THEN greatest(0, ${secondsBetween(at, ms(`${r}.state_timestamp`))}) ELSE 0 END`
  const lateness = `CASE
    WHEN ${r}.start_time IS NOT NULL AND ${r}.expected_start_time IS NOT NULL AND ${ms(`${r}.start_time`)} > ${ms(`${r}.expected_start_time`)}
      THEN ${secondsBetween(ms(`${r}.start_time`), ms(`${r}.expected_start_time`))}
    WHEN ${r}.start_time IS NULL AND ${r}.expected_start_time IS NOT NULL AND ${ms(`${r}.expected_start_time`)} < ${at}
      AND ${r}.state_type IS DISTINCT FROM 'COMPLETED' AND ${r}.state_type IS DISTINCT FROM 'FAILED'
      AND ${r}.state_type IS DISTINCT FROM 'CANCELLED' AND ${r}.state_type IS DISTINCT FROM 'CRASHED'
      THEN ${secondsBetween(at, ms(`${r}.expected_start_time`))}
    ELSE 0 END`
  const createdBy = `CASE WHEN jsonb_typeof(${r}.created_by) = 'object' THEN ${
    jsonObjectSql(["id", "type", "display_value"].map((key) => storedKeySql(`${r}.created_by`, key, "null")).join(", "))
  } END`
  const time = (column: string) => `${isoTimeSql(`${r}.${column}`)} AS ${column}`
  return jsonObjectSql(`
    ${r}.id, ${time("created")}, ${time("updated")}, ${r}.name, ${r}.flow_id, ${r}.state_id, ${r}.deployment_id,
    ${r}.deployment_version, ${r}.work_queue_id, coalesce(work_queue.name, ${r}.work_queue_name) AS work_queue_name,
    ${r}.flow_version, ${r}.parameters, ${r}.idempotency_key, ${r}.context,
    ${jsonObjectSql(POLICY.map(([key, fallback]) => storedKeySql(policy, key, fallback)).join(", "))} AS empirical_policy,
    ${r}.tags, ${r}.labels, ${r}.parent_task_run_id, ${r}.state_type, ${r}.state_name, ${r}.run_count,
    ${time("expected_start_time")}, ${time("next_scheduled_start_time")}, ${time("start_time")}, ${time("end_time")},
    ${r}.total_run_time, ${r}.total_run_time + ${running} AS estimated_run_time, ${lateness} AS estimated_start_time_delta,
    ${r}.auto_scheduled, ${r}.infrastructure_document_id, ${r}.infrastructure_pid, ${createdBy} AS created_by,
    work_pool.id AS work_pool_id, work_pool.name AS work_pool_name, ${stateJsonSql("flow_run_state")} AS state,
    ${r}.job_variables`)
}
