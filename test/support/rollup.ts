/** Checks of the flow-run rollup (migrations 0016 to 0027) against the runs it adds up. */
import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { rollupGrouped } from "../../src/database/migrations/0026_flow_run_rollup_live.ts"
import { rollupGroupedByDeployment } from "../../src/database/migrations/0027_flow_run_rollup_deployments.ts"

const SUMS = "count_runs, sum_run_time, sum_lateness, count_waiting, sum_waiting_since, count_running, sum_running_since"

/** The rollup's two tables: each with its key, what adding up the runs gives, and its deltas. */
const levels = [
  {
    table: "flow_run_rollup",
    key: "slot, state_type, state_name",
    fresh: rollupGrouped("flow_run", 1),
    deltas: "flow_run_rollup_delta"
  },
  {
    table: "flow_run_rollup_deployment",
    key: "deployment_id, slot, state_type, state_name",
    fresh: rollupGroupedByDeployment("(SELECT * FROM flow_run WHERE deployment_id IS NOT NULL)", 1),
    deltas: "(SELECT * FROM flow_run_rollup_delta WHERE deployment_id IS NOT NULL) deltas"
  }
] as const

/**
 * The rollup and its deltas hold exactly what adding up the runs again gives (migration 0026: every
 * run with a state type, name and expected start time; migration 0027: the same per deployment), no
 * row is left with nothing in it, and each row's bound on its Running runs' state timestamps is at
 * least their latest.
 */
export const rollupIsExact = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const { deltas, fresh, key, table } of levels) {
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
        ${table === "flow_run_rollup" ? "" : "AND flow_run.deployment_id IS NOT NULL"}
        AND NOT EXISTS (
          SELECT 1 FROM ${rolled}
          WHERE rolled.slot = flow_run_rollup_slot(flow_run.expected_start_time) AND rolled.state_type = 'RUNNING'
            AND rolled.state_name = flow_run.state_name
            ${table === "flow_run_rollup" ? "" : "AND rolled.deployment_id = flow_run.deployment_id"}
            AND rolled.running_since_max >= CASE WHEN flow_run.total_run_time >= 0 THEN flow_run.state_timestamp ELSE 'infinity' END
        )
    `)
    expect(unbound, table).toEqual([])
  }
})
