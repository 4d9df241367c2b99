import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ROLLUP_ADD, ROLLUP_COLUMNS } from "./0026_flow_run_rollup_live.ts"
import { DEPLOYMENT_ROLLUP_COLUMNS, EMPTY, summed } from "./0027_flow_run_rollup_deployments.ts"

/**
 * The flow-run rollup (migrations 0016 to 0018, 0026 and 0027) per hour too: a 30-day history with
 * 1-day intervals summed about 17,000 quarter-hour rows (30 days, 96 slots a day, a few states), 20
 * to 25 ms of PostgreSQL on a slow machine. Whole hours now come from a quarter as many rows.
 *
 * - `flow_run_rollup_hour` holds what `flow_run_rollup` holds, per hour: the same columns, keyed
 *   (slot, state_type, state_name), `slot` the hour's start (the start of its first quarter hour:
 *   `date_bin('1 hour', …)` from flow_run_rollup_slot's origin, whatever the session's time zone).
 *   Each row is its four quarter-hour rows added up (ROLLUP_ADD), `running_since_max` their greatest
 *   bound (an upper bound of its Running runs' state timestamps, as each quarter's is: it is reset
 *   only when the whole hour has no Running run left, so it may stay above the quarters' bounds).
 * - The deltas stay per quarter hour. The fold adds the moved deltas into the three tables in one
 *   statement (into this one grouped by hour), then deletes the rows it left with nothing in them,
 *   in each table, as 0027's fold did in two: an hour's row goes once its four quarters have gone.
 *   Readers add a table and the deltas (src/flow-runs/history.ts): an hour's row and the deltas of
 *   its four quarter hours.
 * - Filled here from `flow_run_rollup` grouped by hour, and nothing else: the deltas not folded yet
 *   stay where they are, to be read beside both tables and folded into both later (counted into the
 *   hours now, they would count twice). With writers waiting (as 0018, 0026 and 0027), and the fold's
 *   own lock held so that no fold moves deltas into the quarter hours meanwhile.
 *
 * Not per deployment: `flow_run_rollup_deployment` gets no hour rows. A deployment's history reads
 * its own rows only: over the bench's 1M runs, 30 days of its busiest deployment are 5,539 quarter-hour
 * rows (all runs': 17,060), which would be 2,515 hour rows; summing them took PostgreSQL 3.7 to 5.1 ms
 * against 2.4 to 2.8 ms (all runs' 30 days: 23 to 25 ms per quarter hour, 4.6 to 8.7 ms per hour), and
 * that history is under the 50 ms p99 goal already. Per deployment, hours would be 415,000 more rows
 * beside the table's 623,000 (the largest rollup: 2.6M rows over 10M runs) and a fourth table for
 * every fold to write, for 1 to 2 ms (docs/performance.md, "Hours in the rollup (migration 0029)").
 */

/** The hour (its start) of a quarter-hour slot, or of any time: the slot of `flow_run_rollup_hour`. */
export const hourOf = (time: string) => `date_bin('1 hour'::interval, ${time}, '2000-01-01 00:00:00+00'::timestamptz)`

/**
 * Grouped deltas `source` (with a deployment_id) added into the three tables: per deployment, all
 * runs per quarter hour, all runs per hour. The keys each leaves at zero, as `RETURNING` rows with
 * their table's level ('deployment', 'quarter', 'hour').
 */
const addInto = (source: string) => `
  per_deployment AS (
    INSERT INTO flow_run_rollup_deployment AS r (${DEPLOYMENT_ROLLUP_COLUMNS})
    ${summed("deployment_id, slot, state_type, state_name", `${source} WHERE deployment_id IS NOT NULL`)}
    GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (deployment_id, slot, state_type, state_name) DO UPDATE SET ${ROLLUP_ADD}
    RETURNING 'deployment'::text AS level, r.deployment_id, r.slot, r.state_type, r.state_name, ${EMPTY} AS empty
  ),
  quarters AS (
    INSERT INTO flow_run_rollup AS r (${ROLLUP_COLUMNS})
    ${summed("slot, state_type, state_name", source)}
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (slot, state_type, state_name) DO UPDATE SET ${ROLLUP_ADD}
    RETURNING 'quarter'::text, NULL::uuid, r.slot, r.state_type, r.state_name, ${EMPTY} AS empty
  ),
  hours AS (
    INSERT INTO flow_run_rollup_hour AS r (${ROLLUP_COLUMNS})
    ${summed(`${hourOf("slot")}, state_type, state_name`, source)}
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (slot, state_type, state_name) DO UPDATE SET ${ROLLUP_ADD}
    RETURNING 'hour'::text, NULL::uuid, r.slot, r.state_type, r.state_name, ${EMPTY} AS empty
  ),
  emptied AS (
    SELECT * FROM per_deployment WHERE empty
    UNION ALL SELECT * FROM quarters WHERE empty
    UNION ALL SELECT * FROM hours WHERE empty
  )`

/** Deletes the rows of `table` the fold left empty (`level` as addInto says; `key` the join on `e`). */
const deleteEmptied = (table: string, level: string, key: string) => `
  DELETE FROM ${table} r
  USING unnest(levels, deployments, slots, types, names) AS e (level, deployment_id, slot, state_type, state_name)
  WHERE e.level = '${level}' AND ${key} AND r.slot = e.slot AND r.state_type = e.state_type AND r.state_name = e.state_name
    AND ${EMPTY};`

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`LOCK TABLE flow_run IN SHARE ROW EXCLUSIVE MODE`
  // No fold meanwhile (one called by itself, not by a trigger on flow_run: it would move deltas into
  // the quarter hours only, after the hours were filled from them).
  yield* sql`SELECT pg_advisory_xact_lock(7021386710583744579)`
  yield* sql`
    CREATE TABLE IF NOT EXISTS flow_run_rollup_hour (
      slot timestamptz NOT NULL,
      state_type text NOT NULL,
      state_name text NOT NULL,
      count_runs bigint NOT NULL,
      sum_run_time numeric NOT NULL,
      sum_lateness numeric NOT NULL,
      count_waiting bigint NOT NULL,
      sum_waiting_since numeric NOT NULL,
      count_running bigint NOT NULL,
      sum_running_since numeric NOT NULL,
      running_since_max timestamptz,
      PRIMARY KEY (slot, state_type, state_name)
    )
  `
  // As flow_run_rollup's (migration 0026): the rows whose Running runs may have started after a
  // request, found by their bound.
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_flow_run_rollup_hour__running_since_max ON flow_run_rollup_hour (running_since_max)
      WHERE running_since_max IS NOT NULL
  `

  // The deltas moved into the three tables in one statement; then the keys left at zero deleted (a
  // separate statement: the one that updated them does not see its own changes).
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION flow_run_rollup_fold() RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      levels text[];
      deployments uuid[];
      slots timestamptz[];
      types text[];
      names text[];
    BEGIN
      IF NOT pg_try_advisory_xact_lock(7021386710583744579) THEN
        RETURN;
      END IF;
      WITH moved AS (DELETE FROM flow_run_rollup_delta RETURNING *), ${addInto("moved")}
      SELECT array_agg(level), array_agg(deployment_id), array_agg(slot), array_agg(state_type), array_agg(state_name)
      INTO levels, deployments, slots, types, names FROM emptied;
      IF slots IS NOT NULL THEN
        ${deleteEmptied("flow_run_rollup_deployment", "deployment", "r.deployment_id = e.deployment_id")}
        ${deleteEmptied("flow_run_rollup", "quarter", "TRUE")}
        ${deleteEmptied("flow_run_rollup_hour", "hour", "TRUE")}
      END IF;
    END $$
  `)
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM flow_run_rollup;
      DELETE FROM flow_run_rollup_hour;
      DELETE FROM flow_run_rollup_deployment;
      DELETE FROM flow_run_rollup_delta;
      RETURN NULL;
    END $$
  `

  // The quarter hours grouped by hour (groups with nothing in them left out, as the fold leaves none).
  yield* sql`DELETE FROM flow_run_rollup_hour`
  yield* sql.unsafe(`
    INSERT INTO flow_run_rollup_hour AS r (${ROLLUP_COLUMNS})
    SELECT * FROM (${summed(`${hourOf("slot")}, state_type, state_name`, "flow_run_rollup")} GROUP BY 1, 2, 3) r (${ROLLUP_COLUMNS})
    WHERE NOT (${EMPTY})
  `)
  yield* sql`ANALYZE flow_run_rollup_hour`
})

/**
 * Adds grouped rows of `source` (a query giving DEPLOYMENT_ROLLUP_COLUMNS, deployment_id null for
 * none) into the three tables as the fold does (scripts/bench/seed.ts adds the runs it writes this way).
 */
export const addGroupedRows = (source: string) => `
  WITH source (${DEPLOYMENT_ROLLUP_COLUMNS}) AS MATERIALIZED (${source}), ${addInto("source")}
  SELECT count(*) AS emptied FROM emptied`
