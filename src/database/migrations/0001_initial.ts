import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** The key/value configuration table the server keeps its own settings in (e.g. encryption keys). */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE configuration (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      created timestamptz NOT NULL DEFAULT now(),
      updated timestamptz NOT NULL DEFAULT now(),
      key text NOT NULL UNIQUE,
      value jsonb NOT NULL
    )
  `
})
