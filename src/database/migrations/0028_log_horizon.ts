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
 * Reading the sessions costs a few hundred microseconds with many connections open, and under load
 * the oldest running transaction is nearly always a short one of Baton's own. So the function asks
 * only about a transaction that has been the oldest it met for a second or more (it notes the one it
 * met last, and when, in this connection's settings), and it keeps what it learnt: a transaction of
 * another database is passed over from then on (a list of the last 16 such in this connection),
 * one of this database is not asked about again. Either answer stays true for good, so a connection
 * shared by several clients (a pooler) keeps them right.
 *
 * STABLE, so it reads the calling statement's snapshot, and an index condition evaluates it once
 * per scan; PL/pgSQL, so each connection plans it once (inline SQL would be planned with every
 * statement that names it). The sessions are read through the functions behind pg_stat_activity and
 * pg_prepared_xacts (the views add joins that cost more than the rest).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE OR REPLACE FUNCTION baton_log_horizon() RETURNS xid8 LANGUAGE plpgsql STABLE AS $$
    DECLARE
      snapshot pg_snapshot := pg_current_snapshot();
      -- The transaction met last: its id, when it was first met (epoch seconds), and 'ours' once asked.
      met text := coalesce(current_setting('baton.log_horizon_met', true), '');
      others text := coalesce(current_setting('baton.log_horizon_others', true), '');
      other_ids xid8[] := CASE WHEN others = '' THEN '{}'::xid8[] ELSE others::xid8[] END;
      here oid;
      -- From the oldest running transaction on, in expressions only (no query) until one is passed over.
      x xid8 := pg_snapshot_xmin(snapshot);
    BEGIN
      WHILE x < pg_snapshot_xmax(snapshot) LOOP
        IF NOT (x = ANY(other_ids)) THEN
          IF split_part(met, ' ', 1) <> x::text THEN
            met := set_config('baton.log_horizon_met', x::text || ' ' || extract(epoch FROM clock_timestamp())::text, false);
            RETURN x;
          END IF;
          IF split_part(met, ' ', 3) = 'ours' OR clock_timestamp() < to_timestamp(split_part(met, ' ', 2)::float8) + interval '1 second' THEN
            RETURN x;
          END IF;
          IF here IS NULL THEN
            SELECT oid INTO here FROM pg_database WHERE datname = current_database();
          END IF;
          IF NOT EXISTS (SELECT 1 FROM pg_stat_get_activity(NULL::int) a WHERE a.backend_xid = x::xid AND a.datid <> here)
            AND NOT EXISTS (SELECT 1 FROM pg_prepared_xact() p WHERE p.transaction = x::xid AND p.dbid <> here) THEN
            met := set_config('baton.log_horizon_met', met || ' ours', false);
            RETURN x;
          END IF;
          other_ids := (other_ids || x)[greatest(1, cardinality(other_ids) - 14):];
          others := set_config('baton.log_horizon_others', other_ids::text, false);
        END IF;
        x := coalesce((SELECT min(xip) FROM pg_snapshot_xip(snapshot) AS xip WHERE xip > x), pg_snapshot_xmax(snapshot));
      END LOOP;
      RETURN pg_snapshot_xmax(snapshot);
    END
    $$
  `
})
