import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The cancellation cleanup's two other looks (migration 0030 did its look at deleted deployments).
 * Over 1M runs with 300,000 task runs and 3,000 waiting subflows (`EXPLAIN ANALYZE`):
 *
 * - Unfinished subflow runs by their parent task run: the pass checks those parents, instead of
 *   merging every task run with the unfinished runs by parent: 805 ms a look, now 33.
 * - Runs Cancelled within the last day, by when they ended, instead of the runs that ended that day
 *   combined with every Cancelled run ever: 36 ms a look, now 28 (what is left is the unfinished
 *   task runs the planner reads beside them).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_flow_run__end_time_cancelled ON flow_run (end_time)
      WHERE state_type = 'CANCELLED'
  `
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_flow_run__parent_task_run_id_unfinished ON flow_run (parent_task_run_id)
      WHERE parent_task_run_id IS NOT NULL
        AND state_type IN ('SCHEDULED', 'PENDING', 'RUNNING', 'PAUSED', 'CANCELLING')
  `
})
