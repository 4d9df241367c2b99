import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ROLLUP_ADD, ROLLUP_COLUMNS, rollupParts } from "./0026_flow_run_rollup_live.ts"

/**
 * The flow-run rollup (migrations 0016 to 0018 and 0026) per deployment too: a count or history
 * filtered by deployment ids (a deployment's page) is answered as the unfiltered ones are, instead of
 * from every run of those deployments in the window (over 10M runs, a 30-day history of a deployment
 * with 235,000 runs in it took 92 ms p50, against 13 ms unfiltered).
 *
 * - `flow_run_rollup_delta` rows carry the run's `deployment_id` (null for a run without one). A
 *   trigger appends the same rows as before, one column wider: a transition costs what it did.
 * - `flow_run_rollup_deployment` holds what `flow_run_rollup` holds, per deployment: the same
 *   columns behind a `deployment_id`, keyed (deployment_id, slot, state_type, state_name). The fold
 *   adds the moved deltas into both, in the same statement: all of them into `flow_run_rollup`, those
 *   with a deployment into `flow_run_rollup_deployment`. Readers add a table and the deltas, as before
 *   (src/flow-runs/history.ts); with deployment ids, `flow_run_rollup_deployment` and the deltas of
 *   those deployments.
 * - A run that changes deployment (or loses it: set to null) moves between the deployments' rows like
 *   a run changing state: the update trigger now also fires when `deployment_id` changes.
 * - The fold deletes the rows it leaves at zero (no run, every sum 0: a quarter hour's Scheduled,
 *   Pending and Running rows once its runs are final), in both tables. A deployment run once per
 *   quarter hour would otherwise leave a row behind for every state each of its runs went through;
 *   they add nothing to an answer.
 *
 * - A deleted deployment's runs keep its id (flow_run has no foreign key to it), so they stay in its
 *   rows: `flow_runs.deployment_id` still picks them, the `deployments` filter (which needs the
 *   deployment's row) no longer does; history.ts answers both.
 *
 * Size: a row per deployment, quarter hour and state with runs. Over 10M seeded runs (8M of them in
 * 300 deployments) 2.6M rows, 507 MB beside flow_run's 11 GB; never more rows than runs.
 *
 * Filled here from the runs (the per-deployment rows) and from the deltas not folded yet (into
 * `flow_run_rollup`, whose deltas have no deployment yet), with writers waiting (as 0026): 12 s over
 * 1M runs on a loaded machine.
 */

/** The columns of a row of `flow_run_rollup_deployment`, and of a delta. */
export const DEPLOYMENT_ROLLUP_COLUMNS = `deployment_id, ${ROLLUP_COLUMNS}`

/** A run's contribution (rollupParts) with its deployment, `sign` 1 (in) or -1 (out), from the columns of `r`. */
export const deploymentRollupParts = (r: string, sign: string) => `${r}.deployment_id, ${rollupParts(r, sign)}`

/** The runs of `from` (aliased `r`) summed per deployment (null for none) and rollup row: deltas' rows. */
export const rollupGroupedByDeployment = (from: string, sign: 1 | -1) => `
  SELECT deployment_id, slot, state_type, state_name, sum(count_runs), sum(sum_run_time), sum(sum_lateness), sum(count_waiting),
    sum(sum_waiting_since), sum(count_running), sum(sum_running_since), max(running_since_max)
  FROM (
    SELECT ${deploymentRollupParts("r", String(sign))}
    FROM ${from} r
    WHERE r.state_type IS NOT NULL AND r.state_name IS NOT NULL AND r.expected_start_time IS NOT NULL
  ) parts (deployment_id, slot, state_type, state_name, count_runs, sum_run_time, sum_lateness, count_waiting,
    sum_waiting_since, count_running, sum_running_since, running_since_max)
  GROUP BY 1, 2, 3, 4`

/** Sums of rows of `from` (deltas, or rows per deployment) per `key`. */
export const summed = (key: string, from: string) => `
  SELECT ${key}, sum(count_runs), sum(sum_run_time), sum(sum_lateness), sum(count_waiting), sum(sum_waiting_since),
    sum(count_running), sum(sum_running_since), max(running_since_max)
  FROM ${from}`

/** A row that adds nothing: no run, every sum 0 (the fold deletes them). */
export const EMPTY = `r.count_runs = 0 AND r.sum_run_time = 0 AND r.sum_lateness = 0 AND r.count_waiting = 0
  AND r.sum_waiting_since = 0 AND r.count_running = 0 AND r.sum_running_since = 0`

/**
 * Per-deployment rows from grouped deltas `source` (with a deployment_id), and the rows they sum to
 * in `flow_run_rollup`, added in; the keys each leaves at zero, as `RETURNING` rows (deployment_id
 * null for `flow_run_rollup`'s).
 */
const addInto = (source: string) => `
  per_deployment AS (
    INSERT INTO flow_run_rollup_deployment AS r (${DEPLOYMENT_ROLLUP_COLUMNS})
    ${summed("deployment_id, slot, state_type, state_name", `${source} WHERE deployment_id IS NOT NULL`)}
    GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (deployment_id, slot, state_type, state_name) DO UPDATE SET ${ROLLUP_ADD}
    RETURNING r.deployment_id, r.slot, r.state_type, r.state_name, ${EMPTY} AS empty
  ),
  everything AS (
    INSERT INTO flow_run_rollup AS r (${ROLLUP_COLUMNS})
    ${summed("slot, state_type, state_name", source)}
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (slot, state_type, state_name) DO UPDATE SET ${ROLLUP_ADD}
    RETURNING NULL::uuid, r.slot, r.state_type, r.state_name, ${EMPTY} AS empty
  ),
  emptied AS (SELECT * FROM per_deployment WHERE empty UNION ALL SELECT * FROM everything WHERE empty)`

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Filling the table reads every run with a deployment: longer than server.database.timeout (10 s)
  // over a few million runs, which would roll the migration back at every start. No limit for this
  // migration (the setting is the transaction's: put back for the migrations after it).
  const [{ timeout }] = yield* sql<{ timeout: string }>`SELECT current_setting('statement_timeout') AS timeout`
  yield* sql`SELECT set_config('statement_timeout', '0', true)`
  yield* sql`LOCK TABLE flow_run IN SHARE ROW EXCLUSIVE MODE`
  yield* sql`ALTER TABLE flow_run_rollup_delta ADD COLUMN IF NOT EXISTS deployment_id uuid`
  yield* sql`
    CREATE TABLE IF NOT EXISTS flow_run_rollup_deployment (
      deployment_id uuid NOT NULL,
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
      PRIMARY KEY (deployment_id, slot, state_type, state_name)
    )
  `
  // As flow_run_rollup's (migration 0026): the rows whose Running runs may have started after a
  // request, found by their bound.
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_flow_run_rollup_deployment__running_since_max ON flow_run_rollup_deployment (running_since_max)
      WHERE running_since_max IS NOT NULL
  `

  // The deltas moved into both tables in one statement; then the keys left at zero deleted (a
  // separate statement: the one that updated them does not see its own changes).
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION flow_run_rollup_fold() RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      deployments uuid[];
      slots timestamptz[];
      types text[];
      names text[];
    BEGIN
      IF NOT pg_try_advisory_xact_lock(7021386710583744579) THEN
        RETURN;
      END IF;
      WITH moved AS (DELETE FROM flow_run_rollup_delta RETURNING *), ${addInto("moved")}
      SELECT array_agg(deployment_id), array_agg(slot), array_agg(state_type), array_agg(state_name)
      INTO deployments, slots, types, names FROM emptied;
      IF slots IS NOT NULL THEN
        DELETE FROM flow_run_rollup_deployment r
        USING unnest(deployments, slots, types, names) AS e (deployment_id, slot, state_type, state_name)
        WHERE e.deployment_id IS NOT NULL AND r.deployment_id = e.deployment_id AND r.slot = e.slot
          AND r.state_type = e.state_type AND r.state_name = e.state_name AND ${EMPTY};
        DELETE FROM flow_run_rollup r
        USING unnest(deployments, slots, types, names) AS e (deployment_id, slot, state_type, state_name)
        WHERE e.deployment_id IS NULL AND r.slot = e.slot AND r.state_type = e.state_type AND r.state_name = e.state_name
          AND ${EMPTY};
      END IF;
    END $$
  `)
  // A run created or changed: out of its old row (OLD is null for a created run), into its new one,
  // each with its deployment, in one statement.
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION flow_run_rollup_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO flow_run_rollup_delta (${DEPLOYMENT_ROLLUP_COLUMNS})
      SELECT ${deploymentRollupParts("r", "r.sign")}
      FROM (VALUES
        (-1, OLD.deployment_id, OLD.state_type, OLD.state_name, OLD.expected_start_time, OLD.start_time, OLD.total_run_time,
          OLD.state_timestamp),
        (1, NEW.deployment_id, NEW.state_type, NEW.state_name, NEW.expected_start_time, NEW.start_time, NEW.total_run_time,
          NEW.state_timestamp)
      ) AS r (sign, deployment_id, state_type, state_name, expected_start_time, start_time, total_run_time, state_timestamp)
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
      INSERT INTO flow_run_rollup_delta (${DEPLOYMENT_ROLLUP_COLUMNS}) ${rollupGroupedByDeployment("flow_run_rollup_rows", -1)};
      PERFORM flow_run_rollup_fold();
      RETURN NULL;
    END $$
  `)
  yield* sql`
    CREATE OR REPLACE FUNCTION flow_run_rollup_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM flow_run_rollup;
      DELETE FROM flow_run_rollup_deployment;
      DELETE FROM flow_run_rollup_delta;
      RETURN NULL;
    END $$
  `
  // Updates that change what the rollup counts, now including the run's deployment.
  yield* sql`DROP TRIGGER IF EXISTS flow_run_rollup_updated ON flow_run`
  yield* sql`
    CREATE TRIGGER flow_run_rollup_updated AFTER UPDATE ON flow_run FOR EACH ROW
      WHEN ((OLD.state_type, OLD.state_name, OLD.expected_start_time, OLD.start_time, OLD.total_run_time, OLD.state_timestamp,
          OLD.deployment_id)
        IS DISTINCT FROM (NEW.state_type, NEW.state_name, NEW.expected_start_time, NEW.start_time, NEW.total_run_time,
          NEW.state_timestamp, NEW.deployment_id))
      EXECUTE FUNCTION flow_run_rollup_changed()
  `

  // The deltas not folded yet have no deployment: into flow_run_rollup only (the runs they stand for
  // are counted per deployment below, as they are now). Then the rows with nothing left in them.
  yield* sql.unsafe(`
    WITH moved AS (DELETE FROM flow_run_rollup_delta RETURNING *)
    INSERT INTO flow_run_rollup AS r (${ROLLUP_COLUMNS})
    ${summed("slot, state_type, state_name", "moved")}
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (slot, state_type, state_name) DO UPDATE SET ${ROLLUP_ADD}
  `)
  yield* sql.unsafe(`DELETE FROM flow_run_rollup r WHERE ${EMPTY}`)
  yield* sql`DELETE FROM flow_run_rollup_deployment`
  // The runs read 16,384 heap pages (128 MB) at a time, each part added in, with a notice after each:
  // the client drops a connection that says nothing for longer than server.database.timeout and
  // connection_timeout (client.ts, guardedSocket), and one statement over ten million runs takes minutes.
  yield* sql.unsafe(`
    DO $$
    DECLARE
      pages bigint := pg_relation_size('flow_run') / current_setting('block_size')::bigint;
      first bigint := 0;
    BEGIN
      WHILE first < pages LOOP
        INSERT INTO flow_run_rollup_deployment AS r (${DEPLOYMENT_ROLLUP_COLUMNS})
        ${rollupGroupedByDeployment(`(
          SELECT * FROM flow_run
          WHERE ctid >= format('(%s,0)', first)::tid AND ctid < format('(%s,0)', first + 16384)::tid AND deployment_id IS NOT NULL
        )`, 1)}
        ON CONFLICT (deployment_id, slot, state_type, state_name) DO UPDATE SET ${ROLLUP_ADD};
        first := first + 16384;
        RAISE NOTICE 'flow_run_rollup_deployment: % of % pages of flow_run', least(first, pages), pages;
      END LOOP;
    END $$
  `)
  yield* sql`ANALYZE flow_run_rollup`
  yield* sql`ANALYZE flow_run_rollup_deployment`
  yield* sql`SELECT set_config('statement_timeout', ${timeout}, true)`
})

/**
 * Adds grouped rows of `source` (a query giving DEPLOYMENT_ROLLUP_COLUMNS, deployment_id null for
 * none) into both tables (scripts/bench/seed.ts adds the runs it writes this way).
 */
export const addGroupedRows = (source: string) => `
  WITH source (${DEPLOYMENT_ROLLUP_COLUMNS}) AS MATERIALIZED (${source}), ${addInto("source")}
  SELECT count(*) AS emptied FROM emptied`
