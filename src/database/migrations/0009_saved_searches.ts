import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Saved searches: named sets of UI filters. */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE saved_search (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      filters jsonb NOT NULL DEFAULT '[]'::jsonb,
      CONSTRAINT uq_saved_search__name UNIQUE (name)
    )
  `
})
