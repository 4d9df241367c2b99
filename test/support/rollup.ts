/** Checks of the flow-run rollup (migrations 0016 to 0029) against the runs it adds up. */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { rollupGrouped } from "../../src/database/migrations/0026_flow_run_rollup_live.ts"
import { rollupGroupedByDeployment } from "../../src/database/migrations/0027_flow_run_rollup_deployments.ts"

const SUMS = "count_runs, sum_run_time, sum_lateness, count_waiting, sum_waiting_since, count_running, sum_running_since"

/** A quarter hour's (or any time's) hour, as flow_run_rollup_hour's slot (migration 0029), written out here. */
const hourOf = (time: string) => `date_bin('1 hour'::interval, ${time}, '2000-01-01 00:00:00+00'::timestamptz)`

/** Rows of `from` (with a slot and every sum) added up per hour: the hour table's rows. */
const byHour = (from: string) => `
  SELECT ${hourOf("slot")} AS slot, state_type, state_name, sum(count_runs) AS count_runs, sum(sum_run_time) AS sum_run_time,
    sum(sum_lateness) AS sum_lateness, sum(count_waiting) AS count_waiting, sum(sum_waiting_since) AS sum_waiting_since,
    sum(count_running) AS count_running, sum(sum_running_since) AS sum_running_since, max(running_since_max) AS running_since_max
  FROM ${from} GROUP BY 1, 2, 3`

/**
 * The rollup's three tables: each with its key, what adding up the runs gives, its deltas, and the
 * slot a run is counted in.
 */
const levels = [
  {
    table: "flow_run_rollup",
    key: "slot, state_type, state_name",
    fresh: rollupGrouped("flow_run", 1),
    deltas: "flow_run_rollup_delta",
    slotOf: (time: string) => `flow_run_rollup_slot(${time})`
  },
  {
    table: "flow_run_rollup_hour",
    key: "slot, state_type, state_name",
    fresh: byHour(`(${rollupGrouped("flow_run", 1)}) fresh (slot, state_type, state_name, ${SUMS}, running_since_max)`),
    // The deltas are per quarter hour: read per hour beside the hour table.
    deltas: `(SELECT ${hourOf("slot")} AS slot, state_type, state_name, ${SUMS}, running_since_max FROM flow_run_rollup_delta) deltas`,
    slotOf: (time: string) => hourOf(`flow_run_rollup_slot(${time})`)
  },
  {
    table: "flow_run_rollup_deployment",
    key: "deployment_id, slot, state_type, state_name",
    fresh: rollupGroupedByDeployment("(SELECT * FROM flow_run WHERE deployment_id IS NOT NULL)", 1),
    deltas: "(SELECT * FROM flow_run_rollup_delta WHERE deployment_id IS NOT NULL) deltas",
    slotOf: (time: string) => `flow_run_rollup_slot(${time})`
  }
] as const

/**
 * The rollup and its deltas hold exactly what adding up the runs again gives (migration 0026: every
 * run with a state type, name and expected start time; migration 0027: the same per deployment;
 * migration 0029: the same per hour), no row is left with nothing in it, and each row's bound on its
 * Running runs' state timestamps is at least their latest. The hour table alone is also exactly the
 * quarter-hour table alone added up per hour (the fold moves the same deltas into both).
 */
export const rollupIsExact = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const { deltas, fresh, key, slotOf, table } of levels) {
    const columns = `${key}, ${SUMS}`
    const rolled = `(SELECT ${columns}, running_since_max FROM ${table} UNION ALL SELECT ${columns}, running_since_max FROM ${deltas}) rolled`
    const drift = yield* sql.unsafe(`
      WITH fresh AS (
        SELECT * FROM (${fresh}) fresh (${columns}, running_since_max)
      ),
      kept AS (
        SELECT ${key}, sum(count_runs) AS count_runs, sum(sum_run_time) AS sum_run_time,
          sum(sum_lateness) AS sum_lateness, sum(count_waiting) AS count_waiting, sum(sum_waiting_since) AS sum_waiting_since,
          sum(count_running) AS count_running, sum(sum_running_since) AS sum_running_since
        FROM ${rolled} GROUP BY ${key} HAVING sum(count_runs) <> 0
      )
      (SELECT 'missing' AS side, ${columns} FROM fresh EXCEPT SELECT 'missing', * FROM kept)
      UNION ALL
      (SELECT 'extra', * FROM kept EXCEPT SELECT 'extra', ${columns} FROM fresh)
    `)
    expect(drift, table).toEqual([])
    const empty = yield* sql.unsafe(`
      SELECT ${key} FROM ${rolled}
      GROUP BY ${key} HAVING sum(count_runs) = 0 AND (sum(sum_run_time) <> 0 OR sum(sum_lateness) <> 0 OR sum(count_waiting) <> 0
        OR sum(sum_waiting_since) <> 0 OR sum(count_running) <> 0 OR sum(sum_running_since) <> 0)
    `)
    expect(empty, table).toEqual([])
    // The fold deletes the rows it leaves with no run.
    expect(yield* sql.unsafe(`SELECT ${key} FROM ${table} WHERE count_runs = 0`), table).toEqual([])
    const unbound = yield* sql.unsafe(`
      SELECT flow_run.id FROM flow_run
      WHERE flow_run.state_type = 'RUNNING' AND flow_run.state_timestamp IS NOT NULL AND flow_run.state_name IS NOT NULL
        AND flow_run.expected_start_time IS NOT NULL
        ${table === "flow_run_rollup_deployment" ? "AND flow_run.deployment_id IS NOT NULL" : ""}
        AND NOT EXISTS (
          SELECT 1 FROM ${rolled}
          WHERE rolled.slot = ${slotOf("flow_run.expected_start_time")} AND rolled.state_type = 'RUNNING'
            AND rolled.state_name = flow_run.state_name
            ${table === "flow_run_rollup_deployment" ? "AND rolled.deployment_id = flow_run.deployment_id" : ""}
            AND rolled.running_since_max >= CASE WHEN flow_run.total_run_time >= 0 THEN flow_run.state_timestamp ELSE 'infinity' END
        )
    `)
    expect(unbound, table).toEqual([])
  }
  const columns = `slot, state_type, state_name, ${SUMS}`
  const hours = `(SELECT ${columns} FROM flow_run_rollup_hour) hours`
  const quarters = `(SELECT ${columns} FROM (${byHour("flow_run_rollup")}) grouped WHERE count_runs <> 0) quarters`
  const apart = yield* sql.unsafe(`
    (SELECT 'hours only' AS side, * FROM ${hours} EXCEPT SELECT 'hours only', * FROM ${quarters})
    UNION ALL
    (SELECT 'quarters only', * FROM ${quarters} EXCEPT SELECT 'quarters only', * FROM ${hours})
  `)
  expect(apart, "flow_run_rollup_hour against flow_run_rollup per hour").toEqual([])
  // Each hour's bound is at least its quarter hours'.
  const below = yield* sql.unsafe(`
    SELECT q.slot, q.state_type, q.state_name FROM flow_run_rollup q
      LEFT JOIN flow_run_rollup_hour h ON h.slot = ${hourOf("q.slot")} AND h.state_type = q.state_type AND h.state_name = q.state_name
    WHERE q.running_since_max IS NOT NULL AND (h.running_since_max IS NULL OR h.running_since_max < q.running_since_max)
  `)
  expect(below, "flow_run_rollup_hour's bounds").toEqual([])
})
