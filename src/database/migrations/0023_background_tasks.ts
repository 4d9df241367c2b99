import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Background task runs waiting for a task worker, per task key (a retry queue served before the
 * scheduled one), each claimed by the socket that delivers it until the worker acknowledges it, and
 * kept as delivered until the run leaves its Scheduled state; and
 * the task workers connected to any process, with the keys they serve.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE task_run_delivery (
      task_run_id uuid PRIMARY KEY,
      task_key text NOT NULL,
      retry boolean NOT NULL DEFAULT false,
      seq bigserial NOT NULL,
      claimed_until timestamptz,
      delivered_at timestamptz
    )
  `
  yield* sql`CREATE INDEX ix_task_run_delivery__task_key ON task_run_delivery (task_key, retry DESC, seq)`
  // Background task runs (no flow run) waiting or taken: what a refill and the pending timeout look for.
  yield* sql`
    CREATE INDEX ix_task_run__background ON task_run (task_key, state_timestamp)
    WHERE flow_run_id IS NULL AND state_type IN ('SCHEDULED', 'PENDING')
  `
  yield* sql`
    CREATE TABLE task_worker (
      identifier text PRIMARY KEY,
      task_keys jsonb NOT NULL,
      timestamp timestamptz NOT NULL
    )
  `
})
