import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Flow runs, task runs and their state histories. A run's current state is denormalised onto the
 * run (state_id, state_type, state_name, state_timestamp) so filters and sorts need no join.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE flow_run (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      flow_id uuid NOT NULL REFERENCES flow (id) ON DELETE CASCADE,
      state_id uuid,
      state_type text,
      state_name text,
      state_timestamp timestamptz,
      deployment_id uuid,
      deployment_version text,
      work_queue_id uuid,
      work_queue_name text,
      flow_version text,
      parameters jsonb NOT NULL DEFAULT '{}'::jsonb,
      idempotency_key text,
      context jsonb NOT NULL DEFAULT '{}'::jsonb,
      empirical_policy jsonb NOT NULL DEFAULT '{}'::jsonb,
      tags jsonb NOT NULL DEFAULT '[]'::jsonb,
      labels jsonb,
      parent_task_run_id uuid,
      run_count integer NOT NULL DEFAULT 0,
      expected_start_time timestamptz,
      next_scheduled_start_time timestamptz,
      start_time timestamptz,
      end_time timestamptz,
      total_run_time double precision NOT NULL DEFAULT 0,
      auto_scheduled boolean NOT NULL DEFAULT false,
      infrastructure_document_id uuid,
      infrastructure_pid text,
      created_by jsonb,
      job_variables jsonb NOT NULL DEFAULT '{}'::jsonb,
      CONSTRAINT uq_flow_run__flow_id_idempotency_key UNIQUE (flow_id, idempotency_key)
    )
  `
  yield* sql`CREATE INDEX ix_flow_run__flow_id ON flow_run (flow_id)`
  yield* sql`CREATE INDEX ix_flow_run__state_type ON flow_run (state_type)`
  yield* sql`CREATE INDEX ix_flow_run__state_name ON flow_run (state_name)`
  yield* sql`CREATE INDEX ix_flow_run__deployment_id ON flow_run (deployment_id)`
  yield* sql`CREATE INDEX ix_flow_run__work_queue_id ON flow_run (work_queue_id)`
  yield* sql`CREATE INDEX ix_flow_run__work_queue_name ON flow_run (work_queue_name)`
  yield* sql`CREATE INDEX ix_flow_run__parent_task_run_id ON flow_run (parent_task_run_id)`
  yield* sql`CREATE INDEX ix_flow_run__expected_start_time_desc ON flow_run (expected_start_time DESC)`
  yield* sql`CREATE INDEX ix_flow_run__next_scheduled_start_time_asc ON flow_run (next_scheduled_start_time ASC)`
  yield* sql`CREATE INDEX ix_flow_run__start_time ON flow_run (start_time)`
  yield* sql`CREATE INDEX ix_flow_run__end_time_desc ON flow_run (end_time DESC)`
  yield* sql`CREATE INDEX ix_flow_run__coalesce_start_time_expected_start_time ON flow_run ((coalesce(start_time, expected_start_time)))`
  yield* sql`CREATE INDEX ix_flow_run__name ON flow_run (name)`
  yield* sql`CREATE INDEX ix_flow_run__tags ON flow_run USING gin (tags)`
  yield* sql`CREATE INDEX ix_flow_run__state_type_expected_start_time ON flow_run (state_type, expected_start_time)`

  yield* sql`
    CREATE TABLE flow_run_state (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      flow_run_id uuid NOT NULL REFERENCES flow_run (id) ON DELETE CASCADE,
      type text NOT NULL,
      name text,
      timestamp timestamptz NOT NULL,
      message text,
      data jsonb,
      state_details jsonb NOT NULL DEFAULT '{}'::jsonb,
      CONSTRAINT uq_flow_run_state__flow_run_id_timestamp UNIQUE (flow_run_id, timestamp)
    )
  `

  // Input a paused flow run receives (and other key/value messages to a run).
  yield* sql`
    CREATE TABLE flow_run_input (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      flow_run_id uuid NOT NULL REFERENCES flow_run (id) ON DELETE CASCADE,
      key text NOT NULL,
      value text NOT NULL,
      sender text,
      CONSTRAINT uq_flow_run_input__flow_run_id_key UNIQUE (flow_run_id, key)
    )
  `

  yield* sql`
    CREATE TABLE task_run (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      flow_run_id uuid REFERENCES flow_run (id) ON DELETE CASCADE,
      task_key text NOT NULL,
      dynamic_key text NOT NULL,
      cache_key text,
      cache_expiration timestamptz,
      task_version text,
      empirical_policy jsonb NOT NULL DEFAULT '{}'::jsonb,
      tags jsonb NOT NULL DEFAULT '[]'::jsonb,
      labels jsonb,
      state_id uuid,
      state_type text,
      state_name text,
      state_timestamp timestamptz,
      task_inputs jsonb NOT NULL DEFAULT '{}'::jsonb,
      run_count integer NOT NULL DEFAULT 0,
      flow_run_run_count integer NOT NULL DEFAULT 0,
      expected_start_time timestamptz,
      next_scheduled_start_time timestamptz,
      start_time timestamptz,
      end_time timestamptz,
      total_run_time double precision NOT NULL DEFAULT 0,
      CONSTRAINT uq_task_run__flow_run_id_task_key_dynamic_key UNIQUE (flow_run_id, task_key, dynamic_key)
    )
  `
  yield* sql`CREATE INDEX ix_task_run__flow_run_id ON task_run (flow_run_id)`
  yield* sql`CREATE INDEX ix_task_run__state_type ON task_run (state_type)`
  yield* sql`CREATE INDEX ix_task_run__expected_start_time_desc ON task_run (expected_start_time DESC)`
  yield* sql`CREATE INDEX ix_task_run__cache_key ON task_run (cache_key)`
  yield* sql`CREATE INDEX ix_task_run__name ON task_run (name)`
  yield* sql`CREATE INDEX ix_task_run__tags ON task_run USING gin (tags)`

  yield* sql`
    CREATE TABLE task_run_state (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      task_run_id uuid NOT NULL REFERENCES task_run (id) ON DELETE CASCADE,
      type text NOT NULL,
      name text,
      timestamp timestamptz NOT NULL,
      message text,
      data jsonb,
      state_details jsonb NOT NULL DEFAULT '{}'::jsonb,
      CONSTRAINT uq_task_run_state__task_run_id_timestamp UNIQUE (task_run_id, timestamp)
    )
  `
  // Completed task states by cache key, for runs that may reuse a cached result.
  yield* sql`
    CREATE TABLE task_run_state_cache (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      cache_key text NOT NULL,
      cache_expiration timestamptz,
      task_run_state_id uuid NOT NULL REFERENCES task_run_state (id) ON DELETE CASCADE
    )
  `
  yield* sql`CREATE INDEX ix_task_run_state_cache__cache_key_created ON task_run_state_cache (cache_key, created DESC)`
})
