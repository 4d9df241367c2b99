/** Background task runs waiting for task workers, and the task workers connected, in SQL. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven } from "../database/rows.ts"

const WorkerRow = Schema.Struct({
  identifier: Schema.String,
  task_keys: Schema.Array(Schema.String),
  timestamp: Schema.DateFromSelf
})

export class TaskWorkersRepo extends Effect.Service<TaskWorkersRepo>()("baton/TaskWorkersRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /**
     * Claims the next run waiting under one of `keys` (a retry before a scheduled one, oldest first)
     * that no socket holds, or whose claim ran out by `at`, until `until`; its id. Two sockets never
     * claim one run (FOR UPDATE SKIP LOCKED). A run no longer Scheduled (taken, cancelled, deleted)
     * is dropped from the queue on the way.
     */
    const claim = (keys: ReadonlyArray<string>, at: Date, until: Date) =>
      Effect.gen(function* () {
        while (true) {
          const rows = yield* sql<{ task_run_id: string; scheduled: boolean }>`
            UPDATE task_run_delivery d SET claimed_until = ${until}
            WHERE d.task_run_id = (
              SELECT task_run_id FROM task_run_delivery
              WHERE task_key = ANY(${keys}::text[]) AND delivered_at IS NULL AND (claimed_until IS NULL OR claimed_until < ${at})
              ORDER BY retry DESC, seq LIMIT 1 FOR UPDATE SKIP LOCKED
            )
            RETURNING d.task_run_id,
              EXISTS (SELECT 1 FROM task_run r WHERE r.id = d.task_run_id AND r.state_type = 'SCHEDULED') AS scheduled
          `
          const row = rows[0]
          if (row === undefined) return undefined
          if (row.scheduled) return row.task_run_id
          yield* drop(row.task_run_id)
        }
      })

    /**
     * Queues the background task runs still Scheduled but in no queue (of `keys`, or of every key):
     * those a full queue turned away, or scheduled before this server queued them; oldest first,
     * while a key's scheduled queue holds fewer than `perKey`. How many.
     */
    const refill = (keys: ReadonlyArray<string> | null, perKey: number) =>
      Effect.map(
        sql<{ task_run_id: string }>`
          INSERT INTO task_run_delivery (task_run_id, task_key, retry)
          SELECT id, task_key, false FROM (
            SELECT r.id, r.task_key, row_number() OVER (PARTITION BY r.task_key ORDER BY r.state_timestamp, r.id) AS n
            FROM task_run r JOIN task_run_state s ON s.id = r.state_id
            WHERE r.flow_run_id IS NULL AND r.state_type = 'SCHEDULED' AND s.state_details ->> 'deferred' = 'true'
              ${keys === null ? sql`` : sql`AND r.task_key = ANY(${keys}::text[])`}
              AND NOT EXISTS (SELECT 1 FROM task_run_delivery d WHERE d.task_run_id = r.id)
          ) waiting
          WHERE n <= ${perKey} - (SELECT count(*) FROM task_run_delivery d WHERE d.task_key = waiting.task_key AND NOT d.retry AND d.delivered_at IS NULL)
          ON CONFLICT (task_run_id) DO NOTHING
          RETURNING task_run_id
        `,
        (rows) => rows.length
      )

    /**
     * Background task runs of `keys` Pending since before `before` (their worker took them and
     * never ran them), no other transaction holds: at most `limit`, oldest first.
     */
    const stalled = (keys: ReadonlyArray<string>, before: Date, limit: number) =>
      Effect.map(
        sql<{ id: string }>`
          SELECT r.id FROM task_run r
          WHERE r.flow_run_id IS NULL AND r.state_type = 'PENDING' AND r.task_key = ANY(${keys}::text[])
            AND r.state_timestamp < ${before}
            AND EXISTS (
              SELECT 1 FROM task_run_state s
              WHERE s.task_run_id = r.id AND s.type = 'SCHEDULED' AND s.state_details ->> 'deferred' = 'true')
          ORDER BY r.state_timestamp LIMIT ${limit}
          FOR UPDATE OF r SKIP LOCKED
        `,
        (rows) => rows.map((row) => row.id)
      )

    /** The worker acknowledged the run: it is not delivered again (while it stays Scheduled, it stays noted so). */
    const delivered = (taskRunId: string, at: Date) =>
      Effect.asVoid(sql`UPDATE task_run_delivery SET delivered_at = ${at}, claimed_until = NULL WHERE task_run_id = ${taskRunId}`)

    /** The run is gone: it leaves the queue. */
    const drop = (taskRunId: string) => Effect.asVoid(sql`DELETE FROM task_run_delivery WHERE task_run_id = ${taskRunId}`)

    /** The run was sent but not acknowledged: it goes back, to its key's retry queue. */
    const giveBack = (taskRunId: string) =>
      Effect.asVoid(sql`UPDATE task_run_delivery SET claimed_until = NULL, retry = true WHERE task_run_id = ${taskRunId}`)

    /** The worker is connected now, serving `keys` (added to those it served). */
    const observe = (identifier: string, keys: ReadonlyArray<string>, at: Date) =>
      Effect.asVoid(sql`
        INSERT INTO task_worker (identifier, task_keys, timestamp) VALUES (${identifier}, ${JSON.stringify([...new Set(keys)].sort())}::jsonb, ${at})
        ON CONFLICT (identifier) DO UPDATE SET timestamp = EXCLUDED.timestamp,
          task_keys = (SELECT coalesce(jsonb_agg(DISTINCT k ORDER BY k), '[]'::jsonb)
                       FROM jsonb_array_elements_text(task_worker.task_keys || EXCLUDED.task_keys) AS k)
      `)

    const forget = (identifier: string) => Effect.asVoid(sql`DELETE FROM task_worker WHERE identifier = ${identifier}`)

    /** The workers seen since `since` (serving one of `keys`, when given), by identifier. */
    const live = SqlSchema.findAll({
      Request: AsGiven<{ readonly since: Date; readonly keys: ReadonlyArray<string> | null }>(),
      Result: WorkerRow,
      execute: ({ since, keys }) =>
        sql`
          SELECT identifier, task_keys, timestamp FROM task_worker
          WHERE timestamp > ${since} ${keys === null ? sql`` : sql`AND task_keys ?| ${keys}::text[]`}
          ORDER BY identifier
        `
    })

    /** Forgets the workers not seen since `before` (their process died with the socket open). */
    const prune = (before: Date) => Effect.asVoid(sql`DELETE FROM task_worker WHERE timestamp < ${before}`)

    return sqlErrorsAsDefects({ claim, refill, stalled, delivered, drop, giveBack, observe, forget, live, prune })
  })
}) {}
