import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Concurrency leases kept in the database (`server.concurrency.lease_storage = "database"`), so they
 * survive restarts and every replica sees the same ones; and the occupancy average of global limits.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE concurrency_lease (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      expiration timestamptz NOT NULL,
      resource_ids uuid[] NOT NULL,
      slots integer,
      holder_type text,
      holder_id uuid
    )
  `
  yield* sql`CREATE INDEX ix_concurrency_lease__expiration ON concurrency_lease (expiration)`
  yield* sql`CREATE INDEX ix_concurrency_lease__resource_ids ON concurrency_lease USING gin (resource_ids)`
  yield* sql`CREATE INDEX ix_concurrency_lease__holder_id ON concurrency_lease (holder_id)`
})
