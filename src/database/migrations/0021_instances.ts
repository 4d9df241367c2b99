import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The processes that use the database, each with a heartbeat: what `GET /admin/instances` lists, and
 * what a process starting looks at to warn about settings that do not work across processes.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE baton_instance (
      id uuid PRIMARY KEY,
      hostname text NOT NULL,
      pid integer NOT NULL,
      version text NOT NULL,
      started timestamptz NOT NULL,
      heartbeat timestamptz NOT NULL,
      serves_api boolean NOT NULL,
      services jsonb NOT NULL DEFAULT '[]'::jsonb,
      singletons jsonb NOT NULL DEFAULT '[]'::jsonb,
      leads boolean NOT NULL DEFAULT false,
      lease_storage text NOT NULL,
      messaging_broker text NOT NULL
    )
  `
})
