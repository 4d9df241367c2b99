import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * What each process leads, now that each singleton service has its own lock (database/leadership.ts):
 * the services' names. `leads` stays, true when the list is not empty, for processes of the version
 * before during a rolling deploy.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE baton_instance ADD COLUMN IF NOT EXISTS leads_services jsonb NOT NULL DEFAULT '[]'::jsonb`
})
