import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The event log: every event row written from now on carries the transaction that wrote it and a
 * sequence number, so consumers read the events in the order they became final (`txid` below the
 * oldest running transaction) and keep a cursor each (`event_consumer`). Rows written before this
 * migration have neither and are history, not log. `event_outbox` holds what a writing transaction
 * says happened (a state transition, a status change) until it is turned into events.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Nullable without a stored default for the old rows: adding them rewrites nothing.
  yield* sql`ALTER TABLE events ADD COLUMN txid xid8, ADD COLUMN seq bigint`
  yield* sql`CREATE SEQUENCE events_seq AS bigint OWNED BY events.seq`
  yield* sql`ALTER TABLE events ALTER COLUMN txid SET DEFAULT pg_current_xact_id(), ALTER COLUMN seq SET DEFAULT nextval('events_seq')`
  yield* sql`CREATE INDEX ix_events__txid_seq ON events (txid, seq) WHERE txid IS NOT NULL`
  yield* sql`
    CREATE TABLE event_consumer (
      name text PRIMARY KEY,
      txid xid8 NOT NULL,
      seq bigint NOT NULL,
      updated timestamptz NOT NULL DEFAULT now()
    )
  `
  yield* sql`
    CREATE TABLE event_outbox (
      id bigserial PRIMARY KEY,
      body jsonb NOT NULL
    )
  `
})
