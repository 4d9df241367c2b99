import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Logs of flow runs and task runs (no foreign keys: logs may arrive before, or outlive, their runs). */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE log (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      level smallint NOT NULL,
      message text NOT NULL,
      timestamp timestamptz NOT NULL,
      flow_run_id uuid,
      task_run_id uuid
    )
  `
  yield* sql`CREATE INDEX ix_log__flow_run_id_timestamp ON log (flow_run_id, timestamp, id)`
  yield* sql`CREATE INDEX ix_log__task_run_id ON log (task_run_id)`
  yield* sql`CREATE INDEX ix_log__timestamp ON log (timestamp, id)`
  yield* sql`CREATE INDEX ix_log__level ON log (level)`
})
