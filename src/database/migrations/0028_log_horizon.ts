import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * `baton_log_horizon()`: the oldest transaction still running that can write to this database, or
 * the next one (database/log-order.ts says what readers of the event log make of it). Transaction
 * ids are the PostgreSQL server's: the snapshot's oldest running one may belong to another database
 * on the same server (a long load there, a session idle in a transaction), which cannot add a row
 * here. One seen running in another database, by its session or as a prepared transaction, is
 * passed over; any other counts, including one of the snapshot's that has ended by the time the
 * sessions are read (it then ended before the reader's next statement, which sees its rows). A
 * session's database never changes and a transaction id is never given twice, so no transaction of
 * this database is taken for another's.
 *
 * STABLE, so it reads the calling statement's snapshot, and an index condition evaluates it once
 * per scan; PL/pgSQL, so each connection plans it once (inline SQL would be planned with every
 * statement that names it). It reads the sessions only when a transaction older than the next one
 * runs at all, through the functions behind pg_stat_activity and pg_prepared_xacts (the views add
 * joins that cost more than the rest).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE OR REPLACE FUNCTION baton_log_horizon() RETURNS xid8 LANGUAGE plpgsql STABLE AS $$
    DECLARE
      snapshot pg_snapshot := pg_current_snapshot();
      here oid;
      oldest xid8;
    BEGIN
      IF pg_snapshot_xmin(snapshot) = pg_snapshot_xmax(snapshot) THEN
        RETURN pg_snapshot_xmax(snapshot);
      END IF;
      SELECT oid INTO here FROM pg_database WHERE datname = current_database();
      SELECT min(x) INTO oldest FROM pg_snapshot_xip(snapshot) AS x
      WHERE NOT EXISTS (SELECT 1 FROM pg_stat_get_activity(NULL::int) a WHERE a.backend_xid = x::xid AND a.datid <> here)
        AND NOT EXISTS (SELECT 1 FROM pg_prepared_xact() p WHERE p.transaction = x::xid AND p.dbid <> here);
      RETURN coalesce(oldest, pg_snapshot_xmax(snapshot));
    END
    $$
  `
})
