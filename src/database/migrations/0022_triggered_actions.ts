import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The actions of firings, stored by the transaction that fires them and removed (with their events
 * written) once performed: a process killed in between loses none; another performs them after
 * their claim runs out.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE automation_triggered_action (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL,
      claimed_until timestamptz,
      body jsonb NOT NULL
    )
  `
  yield* sql`CREATE INDEX ix_automation_triggered_action__seq ON automation_triggered_action (seq)`
})
