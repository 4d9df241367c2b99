import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The runs not in the flow-run rollup (migration 0016: not final yet) by state type, then expected
 * start time. A count or history filtered on state types reads the unfinished runs of those types
 * only: with ix_flow_run__history_live (by expected start time alone) a filter on final types walked
 * every unfinished run of the window to find none. Small: only unfinished runs are in it. The
 * predicate reads exactly as src/flow-runs/history.ts's, for the planner to match it.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_flow_run__history_live_state ON flow_run (state_type, expected_start_time)
      INCLUDE (state_name, total_run_time, state_timestamp, start_time)
      WHERE (state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND state_name IS NOT NULL
        AND expected_start_time IS NOT NULL) IS NOT TRUE
  `
})
