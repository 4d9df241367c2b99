import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Workspace variables: named JSON values that parameters can refer to. */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE variable (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      value jsonb,
      tags jsonb NOT NULL DEFAULT '[]'::jsonb,
      CONSTRAINT uq_variable__name UNIQUE (name)
    )
  `
  yield* sql`CREATE INDEX ix_variable__updated ON variable (updated)`
})
