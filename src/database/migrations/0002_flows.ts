import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Flows: a flow is known by its unique name. */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE flow (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      tags jsonb NOT NULL DEFAULT '[]'::jsonb,
      labels jsonb,
      CONSTRAINT uq_flow__name UNIQUE (name)
    )
  `
  yield* sql`CREATE INDEX ix_flow__created ON flow (created)`
  yield* sql`CREATE INDEX ix_flow__updated ON flow (updated)`
  yield* sql`CREATE INDEX ix_flow__tags ON flow USING gin (tags)`
})
