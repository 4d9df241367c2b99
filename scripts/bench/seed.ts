/**
 * Seeds a large, realistic history of flow runs straight into Baton's tables, for benchmarks of the
 * flow-run queries (filter, count, history) at scale.
 *
 *   npx tsx scripts/bench/seed.ts --url postgresql://postgres@127.0.0.1:5432/bench --runs 1000000 \
 *     [--flows 100] [--deployments 300]
 *
 * The database must already be migrated: run
 *   BATON_SERVER_DATABASE_CONNECTION_URL=<url> npx tsx src/main.ts database upgrade
 * (or start the server against it once). Seeding adds to what is there: it never deletes, and its
 * flows, deployments and work pool get names of their own (a random batch prefix).
 *
 * What it writes, in one transaction with multi-row INSERT … SELECT generate_series:
 * - `flows` flows and `deployments` deployments (each of a flow, in a queue of one work pool
 *   "bench-<batch>" with five queues, with one or two tags);
 * - `runs` flow runs, each with its current state as one flow_run_state row (the columns Baton's own
 *   writes fill: the state on the run denormalised, start/end/total run time, run_count,
 *   next_scheduled_start_time, the state's details with flow_run_id and scheduled_time).
 *   Expected start times are spread over the last 60 days, with 2% in the next two days; deployments
 *   are picked with a skew (some run far more often than others), a fifth of the runs have no
 *   deployment (and no queue). States: older runs about 82% Completed, 7% Failed, 2% Crashed, 3%
 *   Cancelled, 1% Late, 0.5% Running, 0.5% Pending; the last two hours are mostly Running, Pending,
 *   Completed and Failed; future runs are Scheduled. Ids are UUIDv7 from the creation time.
 * The flow_run and flow_run_state secondary indexes are dropped for the bulk insert and created again
 * in the same transaction (so a failure leaves the database as it was); with migration 0016 applied,
 * the new final runs are added to flow_run_rollup in one grouped insert (its row trigger is off for
 * the bulk insert; with migration 0026 all the new runs, final or not; with migration 0027 per
 * deployment too, into flow_run_rollup_deployment, from the same grouping; with migration 0029 per hour
 * too, into flow_run_rollup_hour, in the same statement). Then VACUUM ANALYZE.
 */
import { fileURLToPath } from "node:url"
import pg from "pg"
import { ROLLUP_ADD, ROLLUP_COLUMNS, rollupGrouped } from "../../src/database/migrations/0026_flow_run_rollup_live.ts"
import { addGroupedRows as addGroupedRowsByDeployment, rollupGroupedByDeployment } from "../../src/database/migrations/0027_flow_run_rollup_deployments.ts"
import { addGroupedRows } from "../../src/database/migrations/0029_flow_run_rollup_hours.ts"

export interface SeedOptions {
  readonly runs: number
  readonly flows?: number
  readonly deployments?: number
}

const CHUNK = 100_000
const TAGS = ["env:prod", "env:staging", "team:data", "team:ml", "team:platform", "etl", "reporting", "nightly", "critical", "backfill"]
const RUN_TAGS = ["manual", "retry", "adhoc", "canary"]
const QUEUES = ["default", "critical", "etl", "reporting", "ml"]

/** A UUIDv7 (as text) whose time part is the SQL timestamp expression `ts`. */
const uuidv7 = (ts: string) => `(
  lpad(to_hex(floor(extract(epoch FROM ${ts}) * 1000)::bigint), 12, '0') || '7'
  || substr(replace(gen_random_uuid()::text, '-', ''), 14, 3)
  || substr(replace(gen_random_uuid()::text, '-', ''), 17, 16)
)::uuid`

const STATE_DETAILS = `jsonb_build_object(
  'flow_run_id', s.id, 'task_run_id', NULL, 'child_flow_run_id', NULL,
  'scheduled_time', CASE WHEN s.state_type = 'SCHEDULED'
    THEN to_char(s.expected_start_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END,
  'cache_key', NULL, 'cache_expiration', NULL, 'deferred', false, 'untrackable_result', false,
  'pause_timeout', NULL, 'pause_reschedule', false, 'pause_key', NULL, 'run_input_keyset', NULL,
  'refresh_cache', NULL, 'retriable', NULL, 'transition_id', NULL, 'task_parameters_id', NULL,
  'traceparent', NULL, 'deployment_concurrency_lease_id', NULL
)`

const POLICY = `'{"max_retries":0,"retry_delay_seconds":0,"retries":null,"retry_delay":null,"pause_keys":[],"resuming":false,"retry_type":null}'::jsonb`

/**
 * One chunk of runs [from, to): every random choice made once per run in `r`, the run's columns in
 * `s`, then the run and its state inserted by one statement.
 */
const chunkSql = `
WITH r AS MATERIALIZED (
  SELECT i, random() AS r_time, random() AS r_target, random() AS r_state, random() AS r_late,
    random() AS r_dur, random() AS r_created, random() AS r_tag
  FROM generate_series($1::int, $2::int - 1) AS i
),
t AS (
  SELECT r.*,
    -- 2% in the next two days, the rest over the last 60 days.
    CASE WHEN r_time < 0.02 THEN $3::timestamptz + (r_time / 0.02) * interval '2 days'
      ELSE $3::timestamptz - ((r_time - 0.02) / 0.98) * interval '60 days' END AS expected_start_time,
    -- A fifth of the runs have no deployment (a flow run by hand); deployments are picked with a skew.
    CASE WHEN r_target < 0.2 OR $5::int = 0 THEN $5::int + floor(r_target / 0.2 * $6::int)::int % $6::int
      ELSE floor(power((r_target - 0.2) / 0.8, 2) * $5::int)::int END AS target_n
  FROM r
),
u AS (
  SELECT t.*, tg.flow_id, tg.deployment_id, tg.work_queue_id, tg.work_queue_name, tg.tags AS target_tags,
    CASE
      WHEN t.expected_start_time > $3::timestamptz THEN 'SCHEDULED/Scheduled'
      WHEN t.expected_start_time > $3::timestamptz - interval '2 hours' THEN
        CASE WHEN r_state < 0.4 THEN 'RUNNING/Running' WHEN r_state < 0.5 THEN 'PENDING/Pending'
          WHEN r_state < 0.9 THEN 'COMPLETED/Completed' ELSE 'FAILED/Failed' END
      WHEN r_state < 0.07 THEN 'FAILED/Failed'
      WHEN r_state < 0.09 THEN 'CRASHED/Crashed'
      WHEN r_state < 0.12 THEN 'CANCELLED/Cancelled'
      WHEN r_state < 0.13 THEN 'SCHEDULED/Late'
      WHEN r_state < 0.135 THEN 'RUNNING/Running'
      WHEN r_state < 0.14 THEN 'PENDING/Pending'
      ELSE 'COMPLETED/Completed' END AS st
  FROM t JOIN seed_target tg ON tg.n = t.target_n
),
v AS (
  SELECT u.*, split_part(st, '/', 1) AS state_type, split_part(st, '/', 2) AS state_name,
    -- Started: every final state but Cancelled ones that never started, and Running.
    (split_part(st, '/', 1) IN ('COMPLETED', 'FAILED', 'CRASHED', 'RUNNING')
      OR (split_part(st, '/', 1) = 'CANCELLED' AND r_dur < 0.5)) AS started,
    round((power(r_late, 4) * 600)::numeric, 3)::float8 AS lateness,
    round((5 + power(r_dur, 2) * 3600)::numeric, 3)::float8 AS duration,
    CASE WHEN deployment_id IS NULL THEN expected_start_time
      ELSE expected_start_time - r_created * interval '1 day' END AS created
  FROM u
),
s AS (
  SELECT v.i, v.flow_id, v.deployment_id, v.work_queue_id, v.work_queue_name, v.state_type, v.state_name,
    v.expected_start_time, v.created,
    ${uuidv7("v.created")} AS id,
    CASE WHEN started THEN expected_start_time + lateness * interval '1 second' END AS start_time,
    CASE
      WHEN state_type IN ('COMPLETED', 'FAILED', 'CRASHED') OR (state_type = 'CANCELLED' AND started)
        THEN expected_start_time + (lateness + duration) * interval '1 second'
      WHEN state_type = 'CANCELLED' THEN expected_start_time + interval '10 minutes'
    END AS end_time,
    CASE WHEN state_type IN ('COMPLETED', 'FAILED', 'CRASHED', 'CANCELLED') AND started THEN duration ELSE 0 END AS total_run_time,
    CASE WHEN started THEN 1 ELSE 0 END AS run_count,
    to_jsonb(v.target_tags || CASE WHEN r_tag < 0.3 THEN ARRAY[($4::text[])[1 + floor(r_tag / 0.3 * array_length($4::text[], 1))::int]]
      ELSE ARRAY[]::text[] END) AS tags,
    (ARRAY['brave','calm','eager','fancy','gentle','happy','jolly','kind','lively','nimble','proud','silly','witty','zealous','amber','crimson','golden','ivory','olive','teal'])[1 + v.i % 20]
      || '-' || (ARRAY['badger','beaver','cobra','dingo','eagle','falcon','gecko','heron','ibis','jaguar','koala','lemur','moose','newt','otter','panda','quail','raven','seal','tapir'])[1 + (v.i / 20) % 20]
      || '-' || v.i AS name
  FROM v
),
s2 AS (
  SELECT s.*,
    CASE
      WHEN state_type IN ('COMPLETED', 'FAILED', 'CRASHED', 'CANCELLED') THEN end_time
      WHEN state_type = 'RUNNING' THEN start_time
      WHEN state_type = 'PENDING' THEN expected_start_time + interval '2 seconds'
      ELSE created
    END AS state_timestamp
  FROM s
),
st AS MATERIALIZED (
  SELECT s2.*, ${uuidv7("s2.state_timestamp")} AS state_id FROM s2
),
runs AS (
  INSERT INTO flow_run (
    id, created, updated, name, flow_id, state_id, state_type, state_name, state_timestamp,
    deployment_id, deployment_version, work_queue_id, work_queue_name, flow_version, parameters,
    idempotency_key, context, empirical_policy, tags, labels, parent_task_run_id, run_count,
    expected_start_time, next_scheduled_start_time, start_time, end_time, total_run_time,
    auto_scheduled, job_variables
  )
  SELECT id, created, state_timestamp, name, flow_id, state_id, state_type, state_name, state_timestamp,
    deployment_id, CASE WHEN deployment_id IS NOT NULL THEN 'v' || (1 + i % 3) END, work_queue_id, work_queue_name,
    'v' || (1 + i % 3), jsonb_build_object('n', i % 100, 'mode', CASE WHEN i % 2 = 0 THEN 'full' ELSE 'delta' END),
    NULL, '{}'::jsonb, ${POLICY}, tags,
    jsonb_strip_nulls(jsonb_build_object('prefect.flow.id', flow_id, 'prefect.deployment.id', deployment_id)),
    NULL, run_count, expected_start_time,
    CASE WHEN state_type = 'SCHEDULED' THEN expected_start_time END,
    start_time, end_time, total_run_time, deployment_id IS NOT NULL, '{}'::jsonb
  FROM st
)
INSERT INTO flow_run_state (id, created, updated, flow_run_id, type, name, timestamp, message, data, state_details)
SELECT s.state_id, s.state_timestamp, s.state_timestamp, s.id, s.state_type, s.state_name, s.state_timestamp,
  CASE WHEN s.state_type = 'FAILED' THEN 'Flow run encountered an exception: ValueError'
    WHEN s.state_type = 'CRASHED' THEN 'Flow run infrastructure exited with non-zero status code 1.'
    WHEN s.state_type = 'COMPLETED' THEN 'All states completed.' END,
  'null'::jsonb, ${STATE_DETAILS}
FROM st s
`

/** Seeds `options.runs` flow runs (and their flows, deployments, pool and queues) into a migrated database. */
export async function seedRuns(
  databaseUrl: string,
  options: { runs: number; flows?: number; deployments?: number }
): Promise<void> {
  const flows = Math.max(1, options.flows ?? 100)
  const deployments = Math.max(0, options.deployments ?? 300)
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const started = Date.now()
  const log = (message: string) => console.log(`[seed ${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`)
  try {
    const migrated = await client.query(`SELECT to_regclass('flow_run') IS NOT NULL AS ok`)
    if (!migrated.rows[0].ok) {
      throw new Error("No flow_run table: migrate first (BATON_SERVER_DATABASE_CONNECTION_URL=<url> npx tsx src/main.ts database upgrade)")
    }
    const batch = Math.random().toString(16).slice(2, 8)
    const now = new Date()
    await client.query("BEGIN")
    await client.query("SET LOCAL maintenance_work_mem = '512MB'")
    await client.query("SET LOCAL work_mem = '64MB'")

    // Flows, a pool with its queues, deployments.
    await client.query(
      `INSERT INTO flow (id, created, updated, name, tags, labels)
       SELECT gen_random_uuid(), $2::timestamptz - interval '90 days', $2::timestamptz - interval '90 days',
         'bench-' || $1 || '-flow-' || n, '[]'::jsonb, '{}'::jsonb
       FROM generate_series(0, $3::int - 1) n`,
      [batch, now, flows]
    )
    const pool = await client.query<{ id: string }>(
      `INSERT INTO work_pool (id, created, updated, name, type, base_job_template, status)
       VALUES (gen_random_uuid(), $2, $2, 'bench-' || $1, 'process', '{}'::jsonb, 'READY') RETURNING id`,
      [batch, now]
    )
    const poolId = pool.rows[0]!.id
    await client.query(
      `INSERT INTO work_queue (id, created, updated, name, priority, work_pool_id, status)
       SELECT gen_random_uuid(), $2, $2, q.name, q.priority, $3, 'READY'
       FROM unnest($1::text[]) WITH ORDINALITY AS q(name, priority)`,
      [QUEUES, now, poolId]
    )
    await client.query(
      `UPDATE work_pool SET default_queue_id = (SELECT id FROM work_queue WHERE work_pool_id = $1 AND name = 'default')
       WHERE id = $1`,
      [poolId]
    )
    await client.query(
      `INSERT INTO deployment (id, created, updated, name, version, flow_id, work_queue_name, work_queue_id, tags,
         labels, status, path, entrypoint)
       SELECT gen_random_uuid(), $2::timestamptz - interval '80 days', $2::timestamptz - interval '80 days',
         'bench-deployment-' || d.n, 'v1', f.id, q.name, q.id,
         to_jsonb(CASE WHEN d.n % 3 = 0 THEN ARRAY[($5::text[])[1 + d.n % 10], ($5::text[])[1 + (d.n + 1 + (d.n / 10) % 9) % 10]]
           ELSE ARRAY[($5::text[])[1 + d.n % 10]] END),
         '{}'::jsonb, 'READY', '.', 'flows.py:main'
       FROM generate_series(0, $3::int - 1) d(n)
         JOIN (SELECT id, row_number() OVER (ORDER BY name) - 1 AS k FROM flow WHERE name LIKE 'bench-' || $1 || '-flow-%') f
           ON f.k = d.n % $4
         JOIN (SELECT id, name, row_number() OVER (ORDER BY priority) - 1 AS k FROM work_queue WHERE work_pool_id = $6) q
           ON q.k = d.n % 5`,
      [batch, now, deployments, flows, TAGS, poolId]
    )
    // What a run can belong to: the deployments (numbered from 0), then the flows (runs started by hand).
    await client.query(`
      CREATE TEMP TABLE seed_target (n int PRIMARY KEY, flow_id uuid, deployment_id uuid, work_queue_id uuid,
        work_queue_name text, tags text[]) ON COMMIT DROP
    `)
    await client.query(
      `INSERT INTO seed_target
       SELECT row_number() OVER (ORDER BY kind, name) - 1, flow_id, deployment_id, work_queue_id, work_queue_name, tags
       FROM (
         SELECT 0 AS kind, d.name, d.flow_id, d.id AS deployment_id, d.work_queue_id, d.work_queue_name,
           ARRAY(SELECT jsonb_array_elements_text(d.tags)) AS tags
         FROM deployment d JOIN flow f ON f.id = d.flow_id WHERE f.name LIKE 'bench-' || $1 || '-flow-%'
         UNION ALL
         SELECT 1, f.name, f.id, NULL, NULL, NULL, ARRAY[]::text[]
         FROM flow f WHERE f.name LIKE 'bench-' || $1 || '-flow-%'
       ) targets`,
      [batch]
    )
    await client.query("ANALYZE seed_target")
    log(`${flows} flows, ${deployments} deployments, work pool bench-${batch} with ${QUEUES.length} queues`)

    // Secondary indexes are built once after the bulk insert, not row by row.
    const indexes = await client.query<{ name: string; definition: string }>(
      `SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS definition
       FROM pg_index i
       WHERE i.indrelid IN ('flow_run'::regclass, 'flow_run_state'::regclass)
         AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`
    )
    for (const index of indexes.rows) await client.query(`DROP INDEX ${index.name}`)
    log(`dropped ${indexes.rows.length} secondary indexes for the bulk insert`)
    // The rollup of final runs (migration 0016) gets the new runs in one grouped insert at the end,
    // not one row trigger per run.
    const rollup = (await client.query<{ present: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'flow_run'::regclass AND tgname = 'flow_run_rollup_inserted') AS present`
    )).rows[0]!.present
    if (rollup) await client.query("ALTER TABLE flow_run DISABLE TRIGGER flow_run_rollup_inserted")

    const base = Number((await client.query<{ n: string }>("SELECT count(*) AS n FROM flow_run")).rows[0]!.n)
    for (let from = 0; from < options.runs; from += CHUNK) {
      const to = Math.min(options.runs, from + CHUNK)
      await client.query(chunkSql, [base + from, base + to, now, RUN_TAGS, deployments, flows])
      log(`${to.toLocaleString("en-US")} / ${options.runs.toLocaleString("en-US")} runs`)
    }

    for (const index of indexes.rows) {
      await client.query(index.definition)
      log(`index ${index.name}`)
    }
    if (rollup) {
      // Since migration 0026 the rollup holds the unfinished runs too.
      const live = (await client.query<{ present: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = 'flow_run_rollup' AND column_name = 'count_waiting') AS present`
      )).rows[0]!.present
      // Since migration 0027 per deployment as well.
      const perDeployment = (await client.query<{ present: boolean }>(
        `SELECT to_regclass('flow_run_rollup_deployment') IS NOT NULL AS present`
      )).rows[0]!.present
      // Since migration 0029 per hour as well (the three tables from the one grouping, as the fold adds deltas).
      const hours = (await client.query<{ present: boolean }>(
        `SELECT to_regclass('flow_run_rollup_hour') IS NOT NULL AS present`
      )).rows[0]!.present
      const batchRuns = "(SELECT * FROM flow_run WHERE flow_id IN (SELECT id FROM flow WHERE name LIKE 'bench-' || $1 || '-flow-%'))"
      await client.query(
        hours
          ? addGroupedRows(rollupGroupedByDeployment(batchRuns, 1))
          : perDeployment
          ? addGroupedRowsByDeployment(rollupGroupedByDeployment(batchRuns, 1))
          : live
          ? `INSERT INTO flow_run_rollup AS r (${ROLLUP_COLUMNS}) ${rollupGrouped(batchRuns, 1)}
             ON CONFLICT (slot, state_type, state_name) DO UPDATE SET ${ROLLUP_ADD}`
          : `INSERT INTO flow_run_rollup AS r (slot, state_type, state_name, count_runs, sum_run_time, sum_lateness)
         SELECT flow_run_rollup_slot(expected_start_time), state_type, state_name, count(*),
           sum(GREATEST(0, total_run_time)::numeric), sum(flow_run_rollup_lateness(start_time, expected_start_time))
         FROM ${batchRuns} flow_run
         WHERE state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND state_name IS NOT NULL
           AND expected_start_time IS NOT NULL
         GROUP BY 1, 2, 3
         ON CONFLICT (slot, state_type, state_name) DO UPDATE SET
           count_runs = r.count_runs + EXCLUDED.count_runs,
           sum_run_time = r.sum_run_time + EXCLUDED.sum_run_time,
           sum_lateness = r.sum_lateness + EXCLUDED.sum_lateness`,
        [batch]
      )
      await client.query("ALTER TABLE flow_run ENABLE TRIGGER flow_run_rollup_inserted")
      log("runs added to flow_run_rollup")
    }
    await client.query("COMMIT")
    log("committed")
    const rollupTables = rollup
      ? (await client.query<{ name: string }>(
        "SELECT relname AS name FROM pg_class WHERE relname IN ('flow_run_rollup', 'flow_run_rollup_hour', 'flow_run_rollup_deployment') AND relkind = 'r'"
      )).rows.map((row) => `, ${row.name}`).join("")
      : ""
    await client.query(`VACUUM ANALYZE flow, deployment, work_pool, work_queue, flow_run, flow_run_state${rollupTables}`)
    log("vacuumed and analyzed")
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined)
    throw error
  } finally {
    await client.end()
  }
}

const argument = (name: string): string | undefined => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? undefined : process.argv[at + 1]
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const url = argument("url")
  const runs = Number(argument("runs") ?? 1_000_000)
  if (url === undefined || !Number.isInteger(runs) || runs < 0) {
    console.error("usage: npx tsx scripts/bench/seed.ts --url postgresql://… [--runs 1000000] [--flows 100] [--deployments 300]")
    process.exit(2)
  }
  const flows = argument("flows")
  const deployments = argument("deployments")
  seedRuns(url, {
    runs,
    ...(flows !== undefined ? { flows: Number(flows) } : {}),
    ...(deployments !== undefined ? { deployments: Number(deployments) } : {})
  }).catch((error) => {
    console.error(error)
    process.exit(1)
  })
}
