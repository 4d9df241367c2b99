import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Deployments and their schedules, with the work pools and queues they are assigned to and the
 * global concurrency limits a deployment's `concurrency_limit` is kept in.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE concurrency_limit_v2 (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      active boolean NOT NULL DEFAULT true,
      name text NOT NULL,
      "limit" integer NOT NULL,
      active_slots integer NOT NULL DEFAULT 0,
      denied_slots integer NOT NULL DEFAULT 0,
      slot_decay_per_second double precision NOT NULL DEFAULT 0,
      avg_slot_occupancy_seconds double precision NOT NULL DEFAULT 2,
      CONSTRAINT uq_concurrency_limit_v2__name UNIQUE (name)
    )
  `

  yield* sql`
    CREATE TABLE work_pool (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      description text,
      type text NOT NULL,
      base_job_template jsonb NOT NULL DEFAULT '{}'::jsonb,
      is_paused boolean NOT NULL DEFAULT false,
      default_queue_id uuid,
      concurrency_limit integer,
      status text NOT NULL DEFAULT 'NOT_READY',
      last_transitioned_status_at timestamptz,
      last_status_event_id uuid,
      storage_configuration jsonb NOT NULL DEFAULT '{}'::jsonb,
      CONSTRAINT uq_work_pool__name UNIQUE (name)
    )
  `
  yield* sql`CREATE INDEX ix_work_pool__type ON work_pool (type)`

  yield* sql`
    CREATE TABLE work_queue (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      filter jsonb,
      description text NOT NULL DEFAULT '',
      is_paused boolean NOT NULL DEFAULT false,
      concurrency_limit integer,
      priority integer NOT NULL,
      last_polled timestamptz,
      status text NOT NULL DEFAULT 'NOT_READY',
      work_pool_id uuid NOT NULL REFERENCES work_pool (id) ON DELETE CASCADE,
      CONSTRAINT uq_work_queue__work_pool_id_name UNIQUE (work_pool_id, name)
    )
  `
  yield* sql`CREATE INDEX ix_work_queue__work_pool_id_priority ON work_queue (work_pool_id, priority)`
  yield* sql`CREATE INDEX ix_work_queue__name ON work_queue (name)`
  // A pool's default queue cannot be deleted out from under it.
  yield* sql`
    ALTER TABLE work_pool ADD CONSTRAINT fk_work_pool__default_queue_id
      FOREIGN KEY (default_queue_id) REFERENCES work_queue (id) ON DELETE RESTRICT DEFERRABLE INITIALLY DEFERRED
  `
  yield* sql`
    ALTER TABLE flow_run ADD CONSTRAINT fk_flow_run__work_queue_id
      FOREIGN KEY (work_queue_id) REFERENCES work_queue (id) ON DELETE SET NULL
  `

  yield* sql`
    CREATE TABLE deployment (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      version text,
      description text,
      flow_id uuid NOT NULL REFERENCES flow (id) ON DELETE CASCADE,
      paused boolean NOT NULL DEFAULT false,
      work_queue_name text,
      work_queue_id uuid REFERENCES work_queue (id) ON DELETE SET NULL,
      job_variables jsonb NOT NULL DEFAULT '{}'::jsonb,
      path text,
      entrypoint text,
      last_polled timestamptz,
      status text NOT NULL DEFAULT 'NOT_READY',
      concurrency_limit_id uuid REFERENCES concurrency_limit_v2 (id) ON DELETE SET NULL,
      concurrency_options jsonb,
      tags jsonb NOT NULL DEFAULT '[]'::jsonb,
      labels jsonb,
      parameters jsonb NOT NULL DEFAULT '{}'::jsonb,
      pull_steps jsonb,
      parameter_openapi_schema jsonb,
      enforce_parameter_schema boolean NOT NULL DEFAULT true,
      created_by jsonb,
      updated_by jsonb,
      infrastructure_document_id uuid,
      storage_document_id uuid,
      CONSTRAINT uq_deployment__flow_id_name UNIQUE (flow_id, name)
    )
  `
  yield* sql`CREATE INDEX ix_deployment__flow_id ON deployment (flow_id)`
  yield* sql`CREATE INDEX ix_deployment__work_queue_id ON deployment (work_queue_id)`
  yield* sql`CREATE INDEX ix_deployment__work_queue_name ON deployment (work_queue_name)`
  yield* sql`CREATE INDEX ix_deployment__paused ON deployment (paused)`
  yield* sql`CREATE INDEX ix_deployment__created ON deployment (created)`
  yield* sql`CREATE INDEX ix_deployment__updated ON deployment (updated)`
  yield* sql`CREATE INDEX ix_deployment__name ON deployment (name)`

  yield* sql`
    CREATE TABLE deployment_schedule (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      deployment_id uuid NOT NULL REFERENCES deployment (id) ON DELETE CASCADE,
      schedule jsonb NOT NULL,
      active boolean NOT NULL DEFAULT true,
      max_scheduled_runs integer,
      parameters jsonb NOT NULL DEFAULT '{}'::jsonb,
      slug text,
      CONSTRAINT uq_deployment_schedule__deployment_id_slug UNIQUE (deployment_id, slug)
    )
  `
  yield* sql`CREATE INDEX ix_deployment_schedule__deployment_id ON deployment_schedule (deployment_id)`

  // The scheduler counts and removes a deployment's future auto-scheduled runs.
  yield* sql`
    CREATE INDEX ix_flow_run__deployment_id_auto_scheduled_next ON flow_run (deployment_id, next_scheduled_start_time)
      WHERE auto_scheduled AND state_type = 'SCHEDULED'
  `
})
