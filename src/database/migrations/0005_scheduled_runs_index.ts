import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The scheduler asks, per deployment schedule, how many future auto-scheduled runs exist and how far
 * ahead the last one is; the schedule is recorded in the run's `created_by.id`. This index answers
 * both without reading the runs, and replaces the per-deployment one.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX IF EXISTS ix_flow_run__deployment_id_auto_scheduled_next`
  yield* sql`
    CREATE INDEX ix_flow_run__auto_scheduled_by_schedule ON flow_run
      (deployment_id, (created_by ->> 'id'), next_scheduled_start_time)
      WHERE auto_scheduled = true AND state_type = 'SCHEDULED'
  `
})
