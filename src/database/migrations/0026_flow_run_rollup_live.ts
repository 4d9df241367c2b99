import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The flow-run rollup (migrations 0016 to 0018) holds the runs not final yet too, so that a count or
 * a history no longer reads every unfinished run of its window row by row (in a live database those
 * rows sit on recently changed pages, and an index-only scan of them visits the heap for each).
 *
 * Every run with a state type, a state name and an expected start time is counted per quarter hour
 * of expected start time ("slot") and state. A final run's numbers are fixed; an unfinished run's
 * estimates move with the time of the request `at`, but linearly, so a row keeps what makes them up:
 *
 * - `sum_run_time`: the fixed part of the run time: `GREATEST(0, total_run_time)`, or for a Running
 *   run with a state timestamp its `total_run_time`, whose estimate is `total_run_time + (at -
 *   state_timestamp)` once `at` is past the timestamp: `count_running` such runs, the sum of their
 *   state timestamps (epoch seconds, exact numeric) in `sum_running_since`. `running_since_max` is
 *   an upper bound of those timestamps (never lowered while Running runs remain; 'infinity' for a
 *   run whose total run time is negative, whose estimate is not linear): a row whose bound is past
 *   `at` is read from the runs instead.
 * - `sum_lateness`: the fixed part of the lateness (a run that started: start time less expected
 *   start time, at least 0). A run not started and not final is late by `at - expected_start_time`
 *   once `at` is past its expected start: `count_waiting` such runs, their expected start times
 *   summed in `sum_waiting_since`. In a slot wholly before `at` that is `count_waiting * at -
 *   sum_waiting_since`; in a slot wholly after, 0; the slot holding `at` is read from the runs.
 *
 * Triggers append every change to `flow_run_rollup_delta` (no key: a transition waits on no one) as
 * before, now for every run created and every transition: the old state's row out, the new one's in,
 * in one statement. src/flow-runs/history.ts reads it; the runs with no state type, name or expected
 * start time (none that Baton writes itself) are read from the runs through a small partial index.
 * Counted again from the runs here, with writers waiting meanwhile (readers do not).
 */

/** A run's contribution to its rollup row, `sign` 1 (in) or -1 (out), from the columns of `r`. */
export const rollupParts = (r: string, sign: string) => `
  flow_run_rollup_slot(${r}.expected_start_time), ${r}.state_type, ${r}.state_name, ${sign},
  ${sign} * (CASE WHEN ${r}.state_type = 'RUNNING' AND ${r}.state_timestamp IS NOT NULL THEN ${r}.total_run_time
    ELSE GREATEST(0, ${r}.total_run_time) END)::numeric,
  ${sign} * flow_run_rollup_lateness(${r}.start_time, ${r}.expected_start_time),
  CASE WHEN ${r}.start_time IS NULL AND ${r}.state_type NOT IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') THEN ${sign} ELSE 0 END,
  CASE WHEN ${r}.start_time IS NULL AND ${r}.state_type NOT IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED')
    THEN ${sign} * EXTRACT(EPOCH FROM ${r}.expected_start_time) ELSE 0 END,
  CASE WHEN ${r}.state_type = 'RUNNING' AND ${r}.state_timestamp IS NOT NULL THEN ${sign} ELSE 0 END,
  CASE WHEN ${r}.state_type = 'RUNNING' AND ${r}.state_timestamp IS NOT NULL THEN ${sign} * EXTRACT(EPOCH FROM ${r}.state_timestamp) ELSE 0 END,
  CASE WHEN ${r}.state_type = 'RUNNING' AND ${r}.state_timestamp IS NOT NULL AND ${sign} > 0
    THEN CASE WHEN ${r}.total_run_time >= 0 THEN ${r}.state_timestamp ELSE 'infinity'::timestamptz END END`

/** The same summed per rollup row over the runs of `from` (aliased `r`). */
export const rollupGrouped = (from: string, sign: 1 | -1) => `
  SELECT slot, state_type, state_name, sum(count_runs), sum(sum_run_time), sum(sum_lateness), sum(count_waiting),
    sum(sum_waiting_since), sum(count_running), sum(sum_running_since), max(running_since_max)
  FROM (
    SELECT ${rollupParts("r", String(sign))}
    FROM ${from} r
    WHERE r.state_type IS NOT NULL AND r.state_name IS NOT NULL AND r.expected_start_time IS NOT NULL
  ) parts (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness, count_waiting, sum_waiting_since,
    count_running, sum_running_since, running_since_max)
  GROUP BY 1, 2, 3`

export const ROLLUP_COLUMNS =
  "slot, state_type, state_name, count_runs, sum_run_time, sum_lateness, count_waiting, sum_waiting_since, count_running, sum_running_since, running_since_max"

/** Adds EXCLUDED's numbers to the row `r` (the bound of a row left with no Running run is dropped). */
export const ROLLUP_ADD = `
  count_runs = r.count_runs + EXCLUDED.count_runs,
  sum_run_time = r.sum_run_time + EXCLUDED.sum_run_time,
  sum_lateness = r.sum_lateness + EXCLUDED.sum_lateness,
  count_waiting = r.count_waiting + EXCLUDED.count_waiting,
  sum_waiting_since = r.sum_waiting_since + EXCLUDED.sum_waiting_since,
  count_running = r.count_running + EXCLUDED.count_running,
  sum_running_since = r.sum_running_since + EXCLUDED.sum_running_since,
  running_since_max = CASE WHEN r.count_running + EXCLUDED.count_running = 0 THEN NULL
    ELSE GREATEST(r.running_since_max, EXCLUDED.running_since_max) END`

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`LOCK TABLE flow_run IN SHARE ROW EXCLUSIVE MODE`
  for (const table of ["flow_run_rollup", "flow_run_rollup_delta"]) {
    yield* sql`
      ALTER TABLE ${sql(table)}
        ADD COLUMN IF NOT EXISTS count_waiting bigint NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS sum_waiting_since numeric NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS count_running bigint NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS sum_running_since numeric NOT NULL DEFAULT 0,
        ADD COLUMN IF NOT EXISTS running_since_max timestamptz
    `
  }
  // The rows a request reads from the runs for a Running run started after it (rare): found by
  // their bound, not by reading every row of the window.
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_flow_run_rollup__running_since_max ON flow_run_rollup (running_since_max)
      WHERE running_since_max IS NOT NULL
  `
  // Runs the rollup cannot hold (no state type, name or expected start time), read one by one.
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_flow_run__history_odd ON flow_run (expected_start_time)
      INCLUDE (state_type, state_name, total_run_time, state_timestamp, start_time)
      WHERE state_type IS NULL OR state_name IS NULL OR expected_start_time IS NULL
  `

  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION flow_run_rollup_fold() RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      IF NOT pg_try_advisory_xact_lock(7021386710583744579) THEN
        RETURN;
      END IF;
      WITH moved AS (DELETE FROM flow_run_rollup_delta RETURNING *)
      INSERT INTO flow_run_rollup AS r (${ROLLUP_COLUMNS})
      SELECT slot, state_type, state_name, sum(count_runs), sum(sum_run_time), sum(sum_lateness), sum(count_waiting),
        sum(sum_waiting_since), sum(count_running), sum(sum_running_since), max(running_since_max)
      FROM moved GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
      ON CONFLICT (slot, state_type, state_name) DO UPDATE SET ${ROLLUP_ADD};
    END $$
  `)
  // A run created or changed: out of its old row (OLD is null for a created run), into its new one,
  // in one statement.
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION flow_run_rollup_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO flow_run_rollup_delta (${ROLLUP_COLUMNS})
      SELECT ${rollupParts("r", "r.sign")}
      FROM (VALUES
        (-1, OLD.state_type, OLD.state_name, OLD.expected_start_time, OLD.start_time, OLD.total_run_time, OLD.state_timestamp),
        (1, NEW.state_type, NEW.state_name, NEW.expected_start_time, NEW.start_time, NEW.total_run_time, NEW.state_timestamp)
      ) AS r (sign, state_type, state_name, expected_start_time, start_time, total_run_time, state_timestamp)
      WHERE r.state_type IS NOT NULL AND r.state_name IS NOT NULL AND r.expected_start_time IS NOT NULL;
      IF random() < 1.0 / 256 THEN
        PERFORM flow_run_rollup_fold();
      END IF;
      RETURN NULL;
    END $$
  `)
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION flow_run_rollup_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO flow_run_rollup_delta (${ROLLUP_COLUMNS}) ${rollupGrouped("flow_run_rollup_rows", -1)};
      PERFORM flow_run_rollup_fold();
      RETURN NULL;
    END $$
  `)
  yield* sql`DROP TRIGGER IF EXISTS flow_run_rollup_inserted ON flow_run`
  yield* sql`DROP TRIGGER IF EXISTS flow_run_rollup_updated ON flow_run`
  yield* sql`DROP FUNCTION IF EXISTS flow_run_rollup_inserted()`
  yield* sql`DROP FUNCTION IF EXISTS flow_run_rollup_updated()`
  yield* sql`
    CREATE TRIGGER flow_run_rollup_inserted AFTER INSERT ON flow_run FOR EACH ROW
      WHEN (NEW.state_type IS NOT NULL AND NEW.state_name IS NOT NULL AND NEW.expected_start_time IS NOT NULL)
      EXECUTE FUNCTION flow_run_rollup_changed()
  `
  // Only updates that change what the rollup counts.
  yield* sql`
    CREATE TRIGGER flow_run_rollup_updated AFTER UPDATE ON flow_run FOR EACH ROW
      WHEN ((OLD.state_type, OLD.state_name, OLD.expected_start_time, OLD.start_time, OLD.total_run_time, OLD.state_timestamp)
        IS DISTINCT FROM (NEW.state_type, NEW.state_name, NEW.expected_start_time, NEW.start_time, NEW.total_run_time, NEW.state_timestamp))
      EXECUTE FUNCTION flow_run_rollup_changed()
  `

  yield* sql`DELETE FROM flow_run_rollup_delta`
  yield* sql`DELETE FROM flow_run_rollup`
  yield* sql.unsafe(`INSERT INTO flow_run_rollup (${ROLLUP_COLUMNS}) ${rollupGrouped("flow_run", 1)}`)
  yield* sql`ANALYZE flow_run_rollup`
})
