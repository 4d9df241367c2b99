import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The flow-run queries a UI and clients send, fast over a million runs:
 *
 * - Indexes ordered by each sort the lists use, behind the filters they combine it with: a state
 *   type, a flow, a deployment. The single-column ones they start with go.
 * - History and the unfiltered count read final runs from `flow_run_rollup`: final runs counted per
 *   hour of expected start time and per state, with their run time and lateness summed (neither
 *   changes any more once a run is final), kept exact by triggers in the transaction that writes the
 *   runs. Everything else (a run not final yet, whose numbers depend on the time of the request) is
 *   read from the runs through a small partial index. A run is in the rollup when
 *     state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND state_name IS NOT NULL
 *     AND expected_start_time IS NOT NULL
 *   (src/flow-runs/history.ts has the same condition and must stay in step with this file).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  // Lists: newest (or oldest) first for one state type, flow or deployment.
  yield* sql`CREATE INDEX IF NOT EXISTS ix_flow_run__state_type_start_time ON flow_run (state_type, (coalesce(start_time, expected_start_time)))`
  yield* sql`CREATE INDEX IF NOT EXISTS ix_flow_run__state_type_id ON flow_run (state_type, id)`
  yield* sql`CREATE INDEX IF NOT EXISTS ix_flow_run__flow_id_expected_start_time ON flow_run (flow_id, expected_start_time)`
  yield* sql`CREATE INDEX IF NOT EXISTS ix_flow_run__flow_id_start_time ON flow_run (flow_id, (coalesce(start_time, expected_start_time)))`
  yield* sql`CREATE INDEX IF NOT EXISTS ix_flow_run__deployment_id_expected_start_time ON flow_run (deployment_id, expected_start_time)`
  yield* sql`CREATE INDEX IF NOT EXISTS ix_flow_run__deployment_id_start_time ON flow_run (deployment_id, (coalesce(start_time, expected_start_time)))`
  // History: runs by expected start time with what a history sums, read without visiting the rows.
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_flow_run__history ON flow_run (expected_start_time)
      INCLUDE (state_type, state_name, total_run_time, state_timestamp, start_time)
  `
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_flow_run__history_live ON flow_run (expected_start_time)
      INCLUDE (state_type, state_name, total_run_time, state_timestamp, start_time)
      WHERE (state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND state_name IS NOT NULL
        AND expected_start_time IS NOT NULL) IS NOT TRUE
  `
  // Each is the first column(s) of one above.
  yield* sql`DROP INDEX IF EXISTS ix_flow_run__flow_id`
  yield* sql`DROP INDEX IF EXISTS ix_flow_run__deployment_id`
  yield* sql`DROP INDEX IF EXISTS ix_flow_run__state_type`
  yield* sql`DROP INDEX IF EXISTS ix_flow_run__expected_start_time_desc`

  yield* sql`
    CREATE TABLE IF NOT EXISTS flow_run_rollup (
      slot timestamptz NOT NULL,
      state_type text NOT NULL,
      state_name text NOT NULL,
      count_runs bigint NOT NULL,
      sum_run_time numeric NOT NULL,
      sum_lateness numeric NOT NULL,
      PRIMARY KEY (slot, state_type, state_name)
    )
  `

  // A run's hour, run time and lateness as the rollup counts them (the history's estimates for a final run).
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_slot(expected_start_time timestamptz) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE AS $$ SELECT date_bin('1 hour'::interval, expected_start_time, '2000-01-01 00:00:00+00'::timestamptz) $$
  `
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_lateness(start_time timestamptz, expected_start_time timestamptz) RETURNS numeric
    LANGUAGE sql IMMUTABLE AS $$
      SELECT GREATEST(0, CASE WHEN start_time IS NOT NULL AND start_time > expected_start_time
        THEN EXTRACT(EPOCH FROM (start_time - expected_start_time)) ELSE 0 END)
    $$
  `
  // A created run that is already final (rare: runs start Pending or Scheduled).
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO flow_run_rollup AS r (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
      VALUES (flow_run_rollup_slot(NEW.expected_start_time), NEW.state_type, NEW.state_name, 1,
        GREATEST(0, NEW.total_run_time)::numeric, flow_run_rollup_lateness(NEW.start_time, NEW.expected_start_time))
      ON CONFLICT (slot, state_type, state_name) DO UPDATE SET
        count_runs = r.count_runs + EXCLUDED.count_runs,
        sum_run_time = r.sum_run_time + EXCLUDED.sum_run_time,
        sum_lateness = r.sum_lateness + EXCLUDED.sum_lateness;
      RETURN NULL;
    END $$
  `
  // Deleted runs (one, or a batch the vacuum or a flow's deletion takes): one grouped change per statement.
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO flow_run_rollup AS r (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
      SELECT flow_run_rollup_slot(expected_start_time), state_type, state_name, -count(*),
        -sum(GREATEST(0, total_run_time)::numeric), -sum(flow_run_rollup_lateness(start_time, expected_start_time))
      FROM flow_run_rollup_rows
      WHERE state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND state_name IS NOT NULL
        AND expected_start_time IS NOT NULL
      GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
      ON CONFLICT (slot, state_type, state_name) DO UPDATE SET
        count_runs = r.count_runs + EXCLUDED.count_runs,
        sum_run_time = r.sum_run_time + EXCLUDED.sum_run_time,
        sum_lateness = r.sum_lateness + EXCLUDED.sum_lateness;
      RETURN NULL;
    END $$
  `
  // An updated run: out of its old key, into its new one, the lower key first (two transactions
  // never wait for each other's rows in opposite orders).
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      was boolean := coalesce(OLD.state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED')
        AND OLD.state_name IS NOT NULL AND OLD.expected_start_time IS NOT NULL, false);
      now_in boolean := coalesce(NEW.state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED')
        AND NEW.state_name IS NOT NULL AND NEW.expected_start_time IS NOT NULL, false);
      old_slot timestamptz;
      new_slot timestamptz;
      old_first boolean;
    BEGIN
      IF was THEN old_slot := flow_run_rollup_slot(OLD.expected_start_time); END IF;
      IF now_in THEN new_slot := flow_run_rollup_slot(NEW.expected_start_time); END IF;
      old_first := was AND (NOT now_in
        OR (old_slot, OLD.state_type, OLD.state_name) <= (new_slot, NEW.state_type, NEW.state_name));
      IF old_first THEN
        INSERT INTO flow_run_rollup AS r (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
        VALUES (old_slot, OLD.state_type, OLD.state_name, -1, -(GREATEST(0, OLD.total_run_time)::numeric),
          -flow_run_rollup_lateness(OLD.start_time, OLD.expected_start_time))
        ON CONFLICT (slot, state_type, state_name) DO UPDATE SET
          count_runs = r.count_runs + EXCLUDED.count_runs,
          sum_run_time = r.sum_run_time + EXCLUDED.sum_run_time,
          sum_lateness = r.sum_lateness + EXCLUDED.sum_lateness;
      END IF;
      IF now_in THEN
        INSERT INTO flow_run_rollup AS r (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
        VALUES (new_slot, NEW.state_type, NEW.state_name, 1, GREATEST(0, NEW.total_run_time)::numeric,
          flow_run_rollup_lateness(NEW.start_time, NEW.expected_start_time))
        ON CONFLICT (slot, state_type, state_name) DO UPDATE SET
          count_runs = r.count_runs + EXCLUDED.count_runs,
          sum_run_time = r.sum_run_time + EXCLUDED.sum_run_time,
          sum_lateness = r.sum_lateness + EXCLUDED.sum_lateness;
      END IF;
      IF was AND NOT old_first THEN
        INSERT INTO flow_run_rollup AS r (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
        VALUES (old_slot, OLD.state_type, OLD.state_name, -1, -(GREATEST(0, OLD.total_run_time)::numeric),
          -flow_run_rollup_lateness(OLD.start_time, OLD.expected_start_time))
        ON CONFLICT (slot, state_type, state_name) DO UPDATE SET
          count_runs = r.count_runs + EXCLUDED.count_runs,
          sum_run_time = r.sum_run_time + EXCLUDED.sum_run_time,
          sum_lateness = r.sum_lateness + EXCLUDED.sum_lateness;
      END IF;
      RETURN NULL;
    END $$
  `
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM flow_run_rollup;
      RETURN NULL;
    END $$
  `
  // Row triggers only fire for runs that are (or were) final: nothing is added to creating a run or
  // to a transition between unfinished states.
  yield* sql`DROP TRIGGER IF EXISTS flow_run_rollup_inserted ON flow_run`
  yield* sql`
    CREATE TRIGGER flow_run_rollup_inserted AFTER INSERT ON flow_run FOR EACH ROW
      WHEN (NEW.state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND NEW.state_name IS NOT NULL
        AND NEW.expected_start_time IS NOT NULL)
      EXECUTE FUNCTION flow_run_rollup_inserted()
  `
  yield* sql`DROP TRIGGER IF EXISTS flow_run_rollup_deleted ON flow_run`
  yield* sql`
    CREATE TRIGGER flow_run_rollup_deleted AFTER DELETE ON flow_run
      REFERENCING OLD TABLE AS flow_run_rollup_rows FOR EACH STATEMENT EXECUTE FUNCTION flow_run_rollup_deleted()
  `
  // Only updates that change what the rollup counts.
  yield* sql`DROP TRIGGER IF EXISTS flow_run_rollup_updated ON flow_run`
  yield* sql`
    CREATE TRIGGER flow_run_rollup_updated AFTER UPDATE ON flow_run FOR EACH ROW
      WHEN (
        (OLD.state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') OR NEW.state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED'))
        AND (OLD.state_type, OLD.state_name, OLD.expected_start_time, OLD.start_time, OLD.total_run_time)
          IS DISTINCT FROM (NEW.state_type, NEW.state_name, NEW.expected_start_time, NEW.start_time, NEW.total_run_time)
      )
      EXECUTE FUNCTION flow_run_rollup_updated()
  `
  yield* sql`DROP TRIGGER IF EXISTS flow_run_rollup_truncated ON flow_run`
  yield* sql`
    CREATE TRIGGER flow_run_rollup_truncated AFTER TRUNCATE ON flow_run
      FOR EACH STATEMENT EXECUTE FUNCTION flow_run_rollup_truncated()
  `

  // The runs already there (the triggers hold writers off until this commits).
  yield* sql`DELETE FROM flow_run_rollup`
  yield* sql`
    INSERT INTO flow_run_rollup (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
    SELECT flow_run_rollup_slot(expected_start_time), state_type, state_name, count(*),
      sum(GREATEST(0, total_run_time)::numeric), sum(flow_run_rollup_lateness(start_time, expected_start_time))
    FROM flow_run
    WHERE state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND state_name IS NOT NULL
      AND expected_start_time IS NOT NULL
    GROUP BY 1, 2, 3
  `
})
