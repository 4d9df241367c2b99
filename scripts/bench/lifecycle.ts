/**
 * One run's whole life, three ways: through Baton's API as a worker drives it, as the SQL statements
 * Baton runs for it sent straight through `pg` (the database limit), and as a job in pg-boss (what a
 * user might pick instead of an orchestration server).
 */
import pg from "pg"
import PgBoss from "pg-boss"
import { v7 as uuidv7 } from "uuid"
import { DEFAULT_STATEMENT_CACHE_SIZE, keepPreparedStatements } from "../../src/database/prepared.ts"
import { eventRows } from "../../src/events/repo.ts"
import type { RunContext } from "../../src/events/run-resources-repo.ts"
import { transitionEvent } from "../../src/events/run-events.ts"
import type { NotedState, TransitionNote } from "../../src/orchestration/transitions.ts"
import type { JsonClient } from "./load.ts"

export interface LifecycleSetup {
  readonly flowId: string
  readonly deploymentId: string
  readonly pool: string
  readonly poolId: string
  /** One queue per simulated worker, so each worker picks up the run it created. */
  readonly queues: ReadonlyArray<{ readonly name: string; readonly id: string }>
}

/** A flow, a process work pool with a queue per worker, and a deployment in that pool. */
export const setUpLifecycle = async (api: JsonClient, workers: number): Promise<LifecycleSetup> => {
  const tag = Math.random().toString(36).slice(2, 8)
  const flow = await api.post("/flows/", { name: `bench-lifecycle-${tag}` })
  const pool = `bench-pool-${tag}`
  const created = await api.post("/work_pools/", { name: pool, type: "process" })
  const queues: Array<{ name: string; id: string }> = []
  for (let i = 0; i < workers; i++) {
    const queue = await api.post(`/work_pools/${pool}/queues/`, { name: `worker-${i}` })
    queues.push({ name: queue.name, id: queue.id })
  }
  const deployment = await api.post("/deployments/", {
    name: `bench-lifecycle-${tag}`,
    flow_id: flow.id,
    work_pool_name: pool,
    work_queue_name: queues[0]!.name
  })
  return { flowId: flow.id, deploymentId: deployment.id, pool, poolId: created.id, queues }
}

const accepted = (answer: { status: string }, step: string) => {
  if (answer.status !== "ACCEPT") throw new Error(`${step}: ${JSON.stringify(answer).slice(0, 300)}`)
}

/** create → poll → Pending → Running → Completed, as worker `worker` (its own queue) does it. */
export const apiLifecycle = (api: JsonClient, setup: LifecycleSetup) => async (worker: number) => {
  const queue = setup.queues[worker]!.name
  await api.post(`/deployments/${setup.deploymentId}/create_flow_run`, { work_queue_name: queue })
  const due = (await api.post(`/work_pools/${setup.pool}/get_scheduled_flow_runs`, {
    work_queue_names: [queue],
    scheduled_before: new Date(Date.now() + 5_000).toISOString(),
    limit: 1
  })) as Array<{ flow_run: { id: string } }>
  if (due.length === 0) throw new Error("the poll found no run")
  const id = due[0]!.flow_run.id
  for (const type of ["PENDING", "RUNNING", "COMPLETED"] as const) {
    accepted(await api.post(`/flow_runs/${id}/set_state`, { state: { type } }), type)
  }
}

const RUN_SOURCE = `SELECT deployment.id, deployment.flow_id, deployment.version, deployment.parameters,
  deployment.enforce_parameter_schema, deployment.parameter_openapi_schema, deployment.job_variables,
  deployment.infrastructure_document_id, deployment.tags, coalesce(deployment.labels, '{}'::jsonb) AS labels,
  deployment.work_queue_id, coalesce(work_queue.name, deployment.work_queue_name) AS work_queue_name,
  work_pool.name AS work_pool_name, work_pool.base_job_template AS job_template,
  (SELECT jsonb_build_object('id', named.id, 'name', named.name) FROM work_queue named
    WHERE named.work_pool_id = work_pool.id AND named.name = $2) AS named_queue
  FROM deployment LEFT JOIN work_queue ON work_queue.id = deployment.work_queue_id
  LEFT JOIN work_pool ON work_pool.id = work_queue.work_pool_id WHERE deployment.id = $1`

const RUN_COLUMNS = `flow_run.*, to_jsonb(flow_run_state.*) AS state, work_queue.name AS queue_name,
  work_pool.id AS work_pool_id, work_pool.name AS work_pool_name`

const RUN_JOINS = `LEFT JOIN flow_run_state ON flow_run_state.id = flow_run.state_id
  LEFT JOIN work_queue ON work_queue.id = flow_run.work_queue_id
  LEFT JOIN work_pool ON work_pool.id = work_queue.work_pool_id`

const EVENT_CONTEXT = `SELECT fr.id, fr.name, fr.run_count, fr.tags, fr.created_by,
  NULL::uuid AS flow_run_id, NULL::text AS flow_run_name, NULL::jsonb AS flow_run_tags,
  f.id AS flow_id, f.name AS flow_name, f.tags AS flow_tags, d.id AS deployment_id, d.name AS deployment_name, d.tags AS deployment_tags,
  wq.id AS work_queue_id, wq.name AS work_queue_name, wp.id AS work_pool_id, wp.name AS work_pool_name,
  wp.type AS work_pool_type, tr.id AS task_run_id, tr.name AS task_run_name, tr.tags AS task_run_tags
  FROM flow_run fr JOIN flow f ON f.id = fr.flow_id LEFT JOIN deployment d ON d.id = fr.deployment_id
  LEFT JOIN work_queue wq ON wq.id = fr.work_queue_id LEFT JOIN work_pool wp ON wp.id = wq.work_pool_id
  LEFT JOIN task_run tr ON tr.id = fr.parent_task_run_id WHERE fr.id = ANY($1::uuid[])`

/**
 * The poll in one statement: the pool and its named queues, the due runs with their records, the
 * queues' and deployments' last-polled bookkeeping with its status notes.
 */
const POLL = `WITH target AS (
    SELECT work_pool.id, coalesce((SELECT jsonb_agg(jsonb_build_object('id', work_queue.id, 'name', work_queue.name))
      FROM work_queue WHERE work_queue.work_pool_id = work_pool.id AND work_queue.name = ANY($2::text[])), '[]'::jsonb) AS queues
    FROM work_pool WHERE work_pool.name = $1),
  polled AS (SELECT (elem ->> 'id')::uuid AS id FROM target, jsonb_array_elements(target.queues) elem
    WHERE NOT EXISTS (SELECT 1 FROM unnest($2::text[]) AS asked(name)
      WHERE asked.name NOT IN (SELECT elem ->> 'name' FROM target, jsonb_array_elements(target.queues) elem))),
  queues_changed AS (SELECT id FROM work_queue WHERE id IN (SELECT id FROM polled) AND status = 'NOT_READY'),
  queues_polled AS (UPDATE work_queue SET last_polled = $3, status = CASE WHEN status = 'NOT_READY' THEN 'READY' ELSE status END
    WHERE id IN (SELECT id FROM polled)),
  deployments_changed AS (SELECT id FROM deployment WHERE work_queue_id IN (SELECT id FROM polled) AND status IS DISTINCT FROM 'READY'),
  deployments_polled AS (UPDATE deployment SET status = 'READY', last_polled = $3 WHERE work_queue_id IN (SELECT id FROM polled)),
  changed AS (SELECT 'work-queue' AS kind, id FROM queues_changed UNION ALL SELECT 'deployment' AS kind, id FROM deployments_changed),
  noted AS (INSERT INTO event_outbox (body)
    SELECT jsonb_build_object('type', 'status', 'kind', kind, 'id', id, 'status', 'READY', 'at', $4::text) FROM changed)
  SELECT jsonb_build_object('id', target.id, 'queues', target.queues,
    'changed', coalesce((SELECT jsonb_agg(jsonb_build_object('kind', kind, 'id', id)) FROM changed), '[]'::jsonb)) AS along,
    ${RUN_COLUMNS} FROM target LEFT JOIN ((
  WITH pool AS (SELECT id, concurrency_limit FROM work_pool WHERE id = (SELECT id FROM target) AND NOT is_paused),
  pool_room AS (SELECT CASE WHEN pool.concurrency_limit IS NULL THEN NULL ELSE GREATEST(0, pool.concurrency_limit - (
    SELECT count(*) FROM flow_run JOIN work_queue ON work_queue.id = flow_run.work_queue_id
    WHERE work_queue.work_pool_id = pool.id AND NOT work_queue.is_paused AND flow_run.state_type IN ('PENDING', 'RUNNING'))) END AS room FROM pool),
  queues AS (SELECT work_queue.id, work_queue.priority, CASE WHEN work_queue.concurrency_limit IS NULL THEN NULL
    ELSE GREATEST(0, work_queue.concurrency_limit - (SELECT count(*) FROM flow_run WHERE flow_run.work_queue_id = work_queue.id
      AND flow_run.state_type IN ('PENDING', 'RUNNING'))) END AS room
    FROM work_queue JOIN pool ON pool.id = work_queue.work_pool_id
    WHERE NOT work_queue.is_paused AND work_queue.id = ANY(ARRAY(SELECT id FROM polled)))
  SELECT due.id, queues.id AS work_queue_id,
    row_number() OVER (ORDER BY queues.priority, due.next_scheduled_start_time, due.id) AS position
  FROM queues CROSS JOIN LATERAL (
    SELECT flow_run.id, flow_run.next_scheduled_start_time FROM flow_run WHERE flow_run.work_queue_id = queues.id
      AND flow_run.state_type = 'SCHEDULED' AND (flow_run.empirical_policy ->> 'retry_type') IS DISTINCT FROM 'in_process'
      AND flow_run.next_scheduled_start_time <= $5 ORDER BY flow_run.next_scheduled_start_time, flow_run.id
      LIMIT LEAST(coalesce(queues.room, $6), $6)) due
  ORDER BY queues.priority, due.next_scheduled_start_time, due.id LIMIT LEAST($6, coalesce((SELECT room FROM pool_room), $6))
) listed JOIN flow_run ON flow_run.id = listed.id ${RUN_JOINS}) ON true ORDER BY listed.position`

/**
 * A transition's store: the run's columns if the row is the version inserted (or stored last) and its
 * deployment still has no limit, its state and its event's note; the row's new version.
 */
const TRANSITION_STORE = `WITH run AS (
    UPDATE flow_run SET updated = $2, state_id = $1, state_type = $4, state_name = $5, state_timestamp = $2,
      start_time = CASE WHEN $4 = 'RUNNING' THEN $2 ELSE start_time END,
      end_time = CASE WHEN $4 = 'COMPLETED' THEN $2 ELSE end_time END,
      run_count = run_count + CASE WHEN $4 = 'RUNNING' THEN 1 ELSE 0 END, total_run_time = total_run_time,
      expected_start_time = COALESCE(expected_start_time, $2),
      next_scheduled_start_time = CASE WHEN $4 = 'SCHEDULED' THEN $2 ELSE NULL END, empirical_policy = $7::jsonb
    WHERE id = $3 AND xmin = $8::xid
      AND NOT EXISTS (SELECT 1 FROM deployment d WHERE d.id = flow_run.deployment_id AND d.concurrency_limit_id IS NOT NULL)
    RETURNING id, xmin::text AS row_version),
  stored AS (INSERT INTO flow_run_state (id, created, updated, flow_run_id, type, name, timestamp, message, data, state_details)
    SELECT $1::uuid, $2::timestamptz, $2::timestamptz, $3::uuid, $4::text, $5::text, $2::timestamptz, NULL::text, 'null'::jsonb, $6::jsonb FROM run),
  noted AS (INSERT INTO event_outbox (body) SELECT $9::jsonb FROM run)
  SELECT count(*)::int AS stored, max(row_version) AS row_version FROM run`

/** The relay's batch: the notes out of the outbox. */
const TAKE_NOTES = `DELETE FROM event_outbox WHERE id IN (SELECT id FROM event_outbox ORDER BY id LIMIT 500 FOR UPDATE SKIP LOCKED)
  RETURNING id, body`

/** The relay's batch: its events and their resources in, and the NOTIFY that wakes other processes' readers. */
const WRITE_EVENTS = `WITH inserted AS (
    INSERT INTO events (id, occurred, event, resource_id, resource, related_resource_ids, related, payload, received, recorded, follows)
    SELECT r.id, r.occurred, r.event, r.resource_id, r.resource, r.related_resource_ids, r.related, r.payload, r.received, $1, r.follows
    FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, occurred timestamptz, event text, resource_id text, resource jsonb,
      related_resource_ids jsonb, related jsonb, payload jsonb, received timestamptz, follows uuid)
    ON CONFLICT (id) DO NOTHING RETURNING id
  ), resources AS (
    INSERT INTO event_resources (id, occurred, resource_id, resource_role, resource, event_id)
    SELECT r.id, r.occurred, r.resource_id, r.resource_role, r.resource, r.event_id
    FROM jsonb_to_recordset($3::jsonb) AS r(id uuid, occurred timestamptz, resource_id text, resource_role text, resource jsonb, event_id uuid)
    WHERE r.event_id IN (SELECT id FROM inserted)
  ), announced AS (SELECT pg_notify($4, $5) WHERE $6 AND EXISTS (SELECT 1 FROM inserted))
  SELECT id, (SELECT count(*) FROM announced) AS announced FROM inserted`

/**
 * A consumer's look (the triggers' and the task run recorder's): passes over the events it does not
 * handle, up to the log's horizon (`baton_log_horizon()`, migration 0028), says what follows.
 */
const CONSUMER_LOOK = `WITH cursor AS (SELECT txid, seq FROM event_consumer WHERE name = $1 FOR UPDATE SKIP LOCKED),
  bound AS (SELECT (CASE WHEN ((SELECT txid FROM events WHERE txid IS NOT NULL AND (txid, seq) > (cursor.txid, cursor.seq)
      ORDER BY txid, seq LIMIT 1) < pg_snapshot_xmin(pg_current_snapshot())) IS NOT FALSE
    THEN pg_snapshot_xmin(pg_current_snapshot()) ELSE baton_log_horizon() END) AS h FROM cursor),
  batch AS (SELECT e.txid, e.seq, e.event FROM cursor, LATERAL (
    SELECT txid, seq, event FROM events WHERE txid IS NOT NULL AND (txid, seq) > (cursor.txid, cursor.seq)
      AND txid < (SELECT h FROM bound) ORDER BY txid, seq LIMIT $2) e),
  handled AS (SELECT txid, seq FROM batch WHERE starts_with(event, $3) ORDER BY txid, seq LIMIT 1),
  skipped AS (SELECT txid, seq FROM batch WHERE NOT EXISTS (SELECT 1 FROM handled WHERE (batch.txid, batch.seq) >= (handled.txid, handled.seq))),
  last AS (SELECT txid, seq FROM skipped ORDER BY txid DESC, seq DESC LIMIT 1),
  moved AS (UPDATE event_consumer SET txid = last.txid, seq = last.seq, updated = now() FROM last WHERE event_consumer.name = $4 RETURNING 1),
  looked AS (SELECT coalesce(b.txid, cursor.txid) AS txid, coalesce(b.seq, cursor.seq) AS seq
    FROM cursor LEFT JOIN LATERAL (SELECT txid, seq FROM batch ORDER BY txid DESC, seq DESC LIMIT 1) b ON true),
  next AS (SELECT (SELECT txid FROM events WHERE txid IS NOT NULL AND (txid, seq) > (looked.txid, looked.seq) ORDER BY txid, seq LIMIT 1) AS txid FROM looked)
  SELECT EXISTS (SELECT 1 FROM event_consumer WHERE name = $5) AS known, EXISTS (SELECT 1 FROM cursor) AS locked,
    (SELECT count(*)::int FROM skipped) AS skipped, EXISTS (SELECT 1 FROM handled) AS ready,
    (SELECT next.txid < bound.h FROM next, bound) AS more, (SELECT next.txid >= bound.h FROM next, bound) AS pending, (SELECT count(*) FROM moved) AS moved`

/** The consumers the server runs beside the lifecycles: the batch each reads, and the events it handles (none here for the triggers). */
const CONSUMERS = [
  { name: "bench_look_triggers", batch: 100, handles: null },
  { name: "bench_look_recorder", batch: 500, handles: "prefect.task-run." }
] as const

/** A state's details as the server stores them. */
const stateDetails = (runId: string, scheduledTime: string | null) => JSON.stringify({
  flow_run_id: runId, task_run_id: null, child_flow_run_id: null, scheduled_time: scheduledTime, cache_key: null,
  cache_expiration: null, deferred: false, untrackable_result: false, pause_timeout: null, pause_reschedule: false,
  pause_key: null, run_input_keyset: null, refresh_cache: null, retriable: null, transition_id: null,
  task_parameters_id: null, traceparent: null, deployment_concurrency_lease_id: null
})

/** A new run's retry policy as the server stores it. */
const EMPIRICAL_POLICY = JSON.stringify({
  max_retries: 0, retry_delay_seconds: 0, retries: null, retry_delay: null, pause_keys: [], resuming: false, retry_type: null
})

/** A transition's note as the server writes it, of a type the server's own relay passes over (it may take some). */
type Note = Omit<TransitionNote, "type"> & { readonly type: "bench" }

/**
 * The events of a relay's batch of notes and their rows, made by the server's own functions
 * (src/events/run-events.ts, src/events/repo.ts): the values of the baseline's statements are the
 * server's, whatever it adds to its events.
 */
const batchEvents = (notes: ReadonlyArray<Note>, contexts: ReadonlyMap<string, RunContext>, received: Date) => {
  const events = notes.flatMap((note) => {
    const context = contexts.get(note.run_id)
    return context === undefined ? [] : [transitionEvent({ ...note, type: "transition" }, context, received)]
  })
  return eventRows(events, received.getTime())
}

/** The least time between two relays, and between two looks of a consumer, under load (src/events/relay.ts, log.ts). */
const GAP_MS = 100
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * The statements Baton's database sees for its lifecycles, as the server sends them (same count,
 * same texts but for whitespace and literals, values of the same shapes: ids as UUIDv7, states'
 * details, notes and events as the server writes them), issued straight through `pg`. Each
 * lifecycle: create (the deployment's columns a run takes with its pool's job template and the
 * named queue, then one statement inserting the run, its first state and its event's note that
 * answers the run's record and version), poll (one statement: the pool with the named queues, the
 * due runs with their records, the queues' and deployments' last-polled bookkeeping), three
 * transitions (state + run + note if the row is still the version the insert or the last store
 * answered, as the server keeps it: no read). Beside them, as the server does it under load, whatever the rate: the relay
 * every 100 ms (a transaction: the notes out, their runs' context, their events in with the run's
 * flow, deployment, queue and pool as related resources) and two consumers' looks every 100 ms.
 * What the baseline leaves out is HTTP, JSON and Baton's own code. `stop` ends the relay and the
 * consumers.
 * Its pool (`baselinePool`) prepares the statements on each connection as the server's does.
 */
export const sqlLifecycle = (pool: pg.Pool, setup: LifecycleSetup) => {
  let stopped = false
  /** `work` again and again, each start at least GAP_MS after the one before, until stopped. */
  const every = async (work: (client: pg.PoolClient) => Promise<void>) => {
    const client = await pool.connect()
    try {
      while (!stopped) {
        const started = performance.now()
        await work(client)
        await sleep(Math.max(0, GAP_MS - (performance.now() - started)))
      }
    } finally {
      client.release()
    }
  }
  const relay = async (client: pg.PoolClient) => {
    await client.query("BEGIN")
    try {
      const taken = await client.query<{ body: Note }>(TAKE_NOTES)
      const notes = taken.rows.map((row) => row.body).filter((body) => body.type === "bench")
      if (notes.length > 0) {
        const context = await client.query<RunContext>(EVENT_CONTEXT, [[...new Set(notes.map((note) => note.run_id))]])
        const { rows, resourceRows } = batchEvents(notes, new Map(context.rows.map((row) => [row.id, row])), new Date())
        await client.query(WRITE_EVENTS, [new Date(), JSON.stringify(rows), JSON.stringify(resourceRows), "baton_bench_events", "written", true])
      }
      await client.query("COMMIT")
    } catch (error) {
      await client.query("ROLLBACK")
      throw error
    }
  }
  /**
   * A consumer's look; its cursor is set to the log's end the first time, as the server makes its
   * own (and again for each baseline: the events written meanwhile are not its lifecycles').
   */
  const look = (consumer: (typeof CONSUMERS)[number]) => {
    let made = false
    return async (client: pg.PoolClient) => {
      if (!made) {
        await client.query(
          `INSERT INTO event_consumer (name, txid, seq) VALUES ($1, pg_snapshot_xmin(pg_current_snapshot()), 0)
           ON CONFLICT (name) DO UPDATE SET txid = excluded.txid, seq = excluded.seq`,
          [consumer.name]
        )
        made = true
      }
      await client.query(CONSUMER_LOOK, [consumer.name, consumer.batch, consumer.handles, consumer.name, consumer.name])
    }
  }
  // A loop that fails stops the others; its error is `stop`'s (never an unhandled rejection meanwhile).
  let failure: unknown
  const alongside = (work: (client: pg.PoolClient) => Promise<void>) =>
    every(work).catch((error: unknown) => {
      failure ??= error
      stopped = true
    })
  const background = Promise.all([alongside(relay), ...CONSUMERS.map((consumer) => alongside(look(consumer)))])
  const lifecycle = async (worker: number) => {
    const queue = setup.queues[worker]!
    const client = await pool.connect()
    try {
      const runId = uuidv7()
      await client.query(RUN_SOURCE, [setup.deploymentId, queue.name])
      const at = new Date().toISOString()
      let state: NotedState = { id: uuidv7(), type: "SCHEDULED", name: "Scheduled", message: null, timestamp: at, pause_reschedule: false }
      let runCount = 0
      const note = (initial: NotedState | null): string =>
        JSON.stringify({ type: "bench", kind: "flow_run", run_id: runId, run_count: runCount, initial_state: initial, validated_state: state } satisfies Note)
      const made = await client.query(
        `WITH run AS (
           INSERT INTO flow_run (id, created, updated, name, flow_id, parameters, context, empirical_policy, tags, labels,
             job_variables, deployment_id, work_queue_name, work_queue_id, state_id, state_type, state_name, state_timestamp,
             run_count, total_run_time, expected_start_time, next_scheduled_start_time)
           VALUES ($1, $2, $2, $3, $4, '{}'::jsonb, '{}'::jsonb, $11::jsonb, '[]'::jsonb, $12::jsonb, '{}'::jsonb, $5, $6, $7,
             $8, 'SCHEDULED', 'Scheduled', $2, 0, 0, $2, $2)
           ON CONFLICT (flow_id, idempotency_key) DO NOTHING RETURNING *, xmin::text AS row_version
         ), stored AS (
           INSERT INTO flow_run_state (id, created, updated, flow_run_id, type, name, timestamp, message, data, state_details)
           SELECT $8::uuid, $2::timestamptz, $2::timestamptz, $1::uuid, 'SCHEDULED', 'Scheduled', $2::timestamptz, NULL::text,
             'null'::jsonb, $9::jsonb FROM run RETURNING *
         ), noted AS (
           INSERT INTO event_outbox (body) SELECT $10::jsonb FROM run
         )
         SELECT r.*, to_jsonb(stored.*) AS state, work_queue.name AS queue_name, work_pool.id AS work_pool_id,
           work_pool.name AS work_pool_name,
           (SELECT jsonb_build_object('concurrency_limit_id', d.concurrency_limit_id, 'concurrency_options', d.concurrency_options)
             FROM deployment d WHERE d.id = r.deployment_id) AS deployment_concurrency
         FROM run r LEFT JOIN stored ON stored.id = r.state_id LEFT JOIN work_queue ON work_queue.id = r.work_queue_id
           LEFT JOIN work_pool ON work_pool.id = work_queue.work_pool_id`,
        [runId, at, `sql-${runId.slice(-12)}`, setup.flowId, setup.deploymentId, queue.name, queue.id, state.id,
          stateDetails(runId, at), note(null), EMPIRICAL_POLICY,
          JSON.stringify({ "prefect.flow.id": setup.flowId, "prefect.deployment.id": setup.deploymentId })]
      )
      // The poll.
      const polledAt = new Date()
      const due = await client.query(POLL, [setup.pool, [queue.name], polledAt, polledAt.toISOString(), new Date(Date.now() + 5_000), 1])
      const id: string = due.rows[0]?.id
      if (id === undefined) throw new Error("the poll found no run")
      // The run's version and latest state timestamp, as its insert and then each store left them (no read).
      let known = { version: made.rows[0].row_version as string, latest: new Date(at).getTime() }
      for (const [type, name] of [["PENDING", "Pending"], ["RUNNING", "Running"], ["COMPLETED", "Completed"]] as const) {
        const initial = state
        // Stamped after the run's latest state, as the server stamps it (two states of a run never share a timestamp).
        const latest = known.latest
        const timestamp = new Date(Math.max(Date.now(), latest + 1)).toISOString()
        state = { id: uuidv7(), type, name, message: null, timestamp, pause_reschedule: false }
        if (type === "RUNNING") runCount++
        const stored = await client.query(TRANSITION_STORE, [
          state.id, state.timestamp, id, type, name, stateDetails(id, null), EMPIRICAL_POLICY, known.version, note(initial)
        ])
        if (stored.rows[0].stored !== 1) throw new Error(`${type}: the run changed meanwhile`)
        known = { version: stored.rows[0].row_version, latest: new Date(state.timestamp).getTime() }
      }
    } finally {
      client.release()
    }
  }
  const stop = async () => {
    stopped = true
    await background
    if (failure !== undefined) throw failure
  }
  return { lifecycle, stop }
}

/**
 * The baseline's connections: statements with parameters prepared on each connection, the same way
 * and as many as the server keeps with its default settings (src/database/prepared.ts).
 */
export const baselinePool = (connectionString: string, max: number) => {
  const pool = new pg.Pool({ connectionString, max })
  pool.on("connect", (client) => keepPreparedStatements(client, DEFAULT_STATEMENT_CACHE_SIZE))
  return pool
}

export interface BossBench {
  readonly lifecycle: (worker: number) => Promise<void>
  readonly stop: () => Promise<void>
}

/** send → fetch → complete in pg-boss, on its own schema of the same database. */
export const pgBossLifecycle = async (connectionString: string, workers: number): Promise<BossBench> => {
  const boss = new PgBoss({ connectionString, max: workers + 2, schema: "bench_pgboss", supervise: false, schedule: false })
  boss.on("error", (error) => console.warn(`  pg-boss: ${String(error)}`))
  await boss.start()
  const queue = `lifecycle-${Math.random().toString(36).slice(2, 8)}`
  await boss.createQueue(queue)
  const lifecycle = async () => {
    await boss.send(queue, { at: Date.now() })
    for (;;) {
      // Workers share the queue: another may have taken this job, so fetch until one is ours.
      const jobs = await boss.fetch(queue)
      const job = jobs?.[0]
      if (job !== undefined) {
        await boss.complete(queue, job.id)
        return
      }
    }
  }
  return { lifecycle, stop: () => boss.stop({ graceful: false, wait: true }) }
}
