import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Runs that become final no longer wait for each other on `flow_run_rollup` (migration 0016): many
 * runs of one hour completing at once all changed the same row, each holding its lock until its
 * transaction committed. Triggers now append their changes to `flow_run_rollup_delta` (no key, no
 * lock), and a fold adds the appended rows into the rollup in one go: about one final transition in
 * 256 runs it (skipped while another fold's transaction is open), in its own transaction. Readers
 * add the rollup and the deltas not folded yet, so every snapshot stays exact.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE IF NOT EXISTS flow_run_rollup_delta (
      slot timestamptz NOT NULL,
      state_type text NOT NULL,
      state_name text NOT NULL,
      count_runs bigint NOT NULL,
      sum_run_time numeric NOT NULL,
      sum_lateness numeric NOT NULL
    )
  `

  // Moves every delta this transaction sees into the rollup, unless a fold is already under way.
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_fold() RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      IF NOT pg_try_advisory_xact_lock(7021386710583744579) THEN
        RETURN;
      END IF;
      WITH moved AS (DELETE FROM flow_run_rollup_delta RETURNING *)
      INSERT INTO flow_run_rollup AS r (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
      SELECT slot, state_type, state_name, sum(count_runs), sum(sum_run_time), sum(sum_lateness)
      FROM moved GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
      ON CONFLICT (slot, state_type, state_name) DO UPDATE SET
        count_runs = r.count_runs + EXCLUDED.count_runs,
        sum_run_time = r.sum_run_time + EXCLUDED.sum_run_time,
        sum_lateness = r.sum_lateness + EXCLUDED.sum_lateness;
    END $$
  `
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO flow_run_rollup_delta (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
      VALUES (flow_run_rollup_slot(NEW.expected_start_time), NEW.state_type, NEW.state_name, 1,
        GREATEST(0, NEW.total_run_time)::numeric, flow_run_rollup_lateness(NEW.start_time, NEW.expected_start_time));
      IF random() < 1.0 / 256 THEN
        PERFORM flow_run_rollup_fold();
      END IF;
      RETURN NULL;
    END $$
  `
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF OLD.state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND OLD.state_name IS NOT NULL
        AND OLD.expected_start_time IS NOT NULL THEN
        INSERT INTO flow_run_rollup_delta (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
        VALUES (flow_run_rollup_slot(OLD.expected_start_time), OLD.state_type, OLD.state_name, -1,
          -(GREATEST(0, OLD.total_run_time)::numeric), -flow_run_rollup_lateness(OLD.start_time, OLD.expected_start_time));
      END IF;
      IF NEW.state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND NEW.state_name IS NOT NULL
        AND NEW.expected_start_time IS NOT NULL THEN
        INSERT INTO flow_run_rollup_delta (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
        VALUES (flow_run_rollup_slot(NEW.expected_start_time), NEW.state_type, NEW.state_name, 1,
          GREATEST(0, NEW.total_run_time)::numeric, flow_run_rollup_lateness(NEW.start_time, NEW.expected_start_time));
      END IF;
      IF random() < 1.0 / 256 THEN
        PERFORM flow_run_rollup_fold();
      END IF;
      RETURN NULL;
    END $$
  `
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO flow_run_rollup_delta (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
      SELECT flow_run_rollup_slot(expected_start_time), state_type, state_name, -count(*),
        -sum(GREATEST(0, total_run_time)::numeric), -sum(flow_run_rollup_lateness(start_time, expected_start_time))
      FROM flow_run_rollup_rows
      WHERE state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND state_name IS NOT NULL
        AND expected_start_time IS NOT NULL
      GROUP BY 1, 2, 3;
      PERFORM flow_run_rollup_fold();
      RETURN NULL;
    END $$
  `
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM flow_run_rollup;
      DELETE FROM flow_run_rollup_delta;
      RETURN NULL;
    END $$
  `
})
