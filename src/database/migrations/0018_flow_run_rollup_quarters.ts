import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The flow-run rollup (migrations 0016 and 0017) counts quarter hours instead of hours: a history
 * whose boundaries are not on the hour (the last 30 days from now) reads the runs of the quarter
 * hours they cut rather than of whole hours, a quarter as many. Counted again from the runs, with
 * writers waiting meanwhile (readers do not).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`LOCK TABLE flow_run IN SHARE ROW EXCLUSIVE MODE`
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_slot(expected_start_time timestamptz) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE AS $$ SELECT date_bin('15 minutes'::interval, expected_start_time, '2000-01-01 00:00:00+00'::timestamptz) $$
  `
  yield* sql`DELETE FROM flow_run_rollup_delta`
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
