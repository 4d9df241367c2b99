import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Indexes for two background passes that read waiting runs, so that a pass costs what it finds, not
 * what the table holds. Over a million runs (30,000 of them Scheduled) the cancellation cleanup's look
 * for runs of deleted deployments fetched every Scheduled run's row to read its deployment: 250 to 400
 * ms of PostgreSQL every 20 s, and ten times that over ten million. The late runs pass combined two
 * indexes into a bitmap of 20,000 rows every 5 s (10 to 14 ms).
 *
 * - The deployments of waiting runs: the cleanup steps from one deployment to the next through this
 *   index (one probe each, src/services/cancellation-cleanup-repo.ts) and looks up only those ids.
 * - Runs named Scheduled by the time they are due: the late runs pass reads the overdue ones in order
 *   and stops at its batch.
 *
 * Both hold only Scheduled runs, which a busy server has few of beside its finished ones.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_flow_run__deployment_id_scheduled ON flow_run (deployment_id)
      WHERE state_type = 'SCHEDULED' AND deployment_id IS NOT NULL
  `
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_flow_run__next_scheduled_start_time_named_scheduled ON flow_run (next_scheduled_start_time)
      WHERE state_type = 'SCHEDULED' AND state_name = 'Scheduled'
  `
})
