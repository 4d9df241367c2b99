import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Artifacts runs publish, and per key the latest of them (artifact_collection), kept in step on
 * every create, update and delete.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE artifact (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      key text,
      type text,
      description text,
      data jsonb,
      metadata_ jsonb,
      flow_run_id uuid,
      task_run_id uuid
    )
  `
  yield* sql`CREATE INDEX ix_artifact__key_created ON artifact (key, created DESC)`
  yield* sql`CREATE INDEX ix_artifact__flow_run_id ON artifact (flow_run_id)`
  yield* sql`CREATE INDEX ix_artifact__task_run_id ON artifact (task_run_id)`
  yield* sql`
    CREATE TABLE artifact_collection (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      key text NOT NULL,
      latest_id uuid NOT NULL,
      type text,
      description text,
      data jsonb,
      metadata_ jsonb,
      flow_run_id uuid,
      task_run_id uuid,
      CONSTRAINT uq_artifact_collection__key UNIQUE (key)
    )
  `
  yield* sql`CREATE INDEX ix_artifact_collection__latest_id ON artifact_collection (latest_id)`
})
