import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Workers (one row per worker name and pool, kept fresh by heartbeats), and the indexes the worker
 * poll and the concurrency counts use.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE worker (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      work_pool_id uuid NOT NULL REFERENCES work_pool (id) ON DELETE CASCADE,
      last_heartbeat_time timestamptz,
      heartbeat_interval_seconds integer,
      status text NOT NULL DEFAULT 'OFFLINE',
      CONSTRAINT uq_worker__work_pool_id_name UNIQUE (work_pool_id, name)
    )
  `
  yield* sql`CREATE INDEX ix_worker__work_pool_id_last_heartbeat_time ON worker (work_pool_id, last_heartbeat_time DESC)`
  // The poll: a queue's Scheduled runs by time.
  yield* sql`
    CREATE INDEX ix_flow_run__work_queue_id_scheduled ON flow_run (work_queue_id, next_scheduled_start_time)
      WHERE state_type = 'SCHEDULED'
  `
  // Concurrency: a queue's runs holding a slot.
  yield* sql`
    CREATE INDEX ix_flow_run__work_queue_id_active ON flow_run (work_queue_id)
      WHERE state_type IN ('PENDING', 'RUNNING', 'CANCELLING')
  `
  yield* sql`ALTER TABLE work_pool ALTER COLUMN storage_configuration SET DEFAULT
    '{"bundle_upload_step": null, "bundle_execution_step": null, "default_result_storage_block_id": null}'::jsonb`
})
