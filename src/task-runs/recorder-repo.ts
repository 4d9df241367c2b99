/**
 * Task runs recorded from the events of client-side orchestration: one upsert of the runs (a newer
 * state wins; a run already known by its flow run (or none), task key and dynamic key keeps its id)
 * and one insert of their states, per batch.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { now } from "../domain/time.ts"
import { traced } from "../domain/traced.ts"

export interface RecordedTaskRun {
  readonly id: string
  readonly flow_run_id: string | null
  readonly name: string
  readonly task_key: string
  readonly dynamic_key: string
  readonly cache_key: string | null
  readonly cache_expiration: string | null
  readonly task_version: string | null
  readonly empirical_policy: unknown
  readonly tags: unknown
  readonly labels: unknown
  readonly task_inputs: unknown
  readonly run_count: number
  readonly flow_run_run_count: number
  readonly expected_start_time: string | null
  readonly next_scheduled_start_time: string | null
  readonly start_time: string | null
  readonly end_time: string | null
  readonly total_run_time: number
  readonly state: {
    readonly id: string
    readonly type: string
    readonly name: string | null
    readonly timestamp: Date
    readonly message: string | null
    readonly data: unknown
    readonly state_details: Record<string, unknown>
  }
}

const JSON_COLUMNS = new Set(["empirical_policy", "tags", "labels", "task_inputs"])

// Rows typed and decoded by hand, not through a row schema (SqlSchema): recording task runs from events is on the hot path (the bench's POST /events).
export class TaskRunRecorderRepo extends Effect.Service<TaskRunRecorderRepo>()("baton/TaskRunRecorderRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const record = traced("TaskRunRecorderRepo.record")(function* (runs: ReadonlyArray<RecordedTaskRun>) {
      if (runs.length === 0) return
      const at = yield* now
      yield* sql.withTransaction(
        Effect.gen(function* () {
          // A run the server already knows by its natural key (its flow run, or none, task key and
          // dynamic key: both are unique) keeps its id, and so does the first of a batch.
          const keyOf = (r: { flow_run_id: string | null; task_key: string; dynamic_key: string }) =>
            `${r.flow_run_id ?? ""}|${r.task_key}|${r.dynamic_key}`
          // Two joins, each the shape of its unique index (NOT DISTINCT FROM would use neither).
          const existing = yield* sql<{ id: string; flow_run_id: string | null; task_key: string; dynamic_key: string }>`
            WITH k AS (
              SELECT * FROM jsonb_to_recordset(${JSON.stringify(runs.map((r) => ({ f: r.flow_run_id, k: r.task_key, d: r.dynamic_key })))}::jsonb)
                AS k(f uuid, k text, d text)
            )
            SELECT t.id, t.flow_run_id, t.task_key, t.dynamic_key
            FROM task_run t JOIN k ON t.flow_run_id = k.f AND t.task_key = k.k AND t.dynamic_key = k.d
            UNION ALL
            SELECT t.id, t.flow_run_id, t.task_key, t.dynamic_key
            FROM task_run t JOIN k ON k.f IS NULL AND t.flow_run_id IS NULL AND t.task_key = k.k AND t.dynamic_key = k.d
          `
          const idByKey = new Map(existing.map((e) => [keyOf(e), e.id]))
          // The newest state of each run wins the run's row; every state is kept.
          const latest = new Map<string, RecordedTaskRun>()
          const states: Array<RecordedTaskRun["state"] & { task_run_id: string }> = []
          for (const run of [...runs].sort((a, b) => a.state.timestamp.getTime() - b.state.timestamp.getTime())) {
            const key = keyOf(run)
            const id = idByKey.get(key) ?? run.id
            idByKey.set(key, id)
            latest.set(id, { ...run, id })
            states.push({ ...run.state, task_run_id: id, state_details: { ...run.state.state_details, task_run_id: id, flow_run_id: run.flow_run_id } })
          }
          const rows = [...latest.values()].map((run) => {
            const { state, ...columns } = run
            const row: Record<string, unknown> = { ...columns, created: at, updated: at }
            for (const column of JSON_COLUMNS) row[column] = row[column] === null ? null : JSON.stringify(row[column])
            return { ...row, state_id: state.id, state_type: state.type, state_name: state.name, state_timestamp: state.timestamp }
          })
          const updated = Object.keys(rows[0]!).filter((c) => c !== "id" && c !== "created")
          yield* sql`
            INSERT INTO task_run ${sql.insert(rows)}
            ON CONFLICT (id) DO UPDATE SET ${sql.unsafe(updated.map((c) => `${c} = EXCLUDED.${c}`).join(", "))}
            WHERE task_run.state_timestamp IS NULL OR task_run.state_timestamp < EXCLUDED.state_timestamp
          `
          yield* sql`
            INSERT INTO task_run_state ${sql.insert(
              states.map((s) => ({
                id: s.id,
                created: at,
                updated: at,
                task_run_id: s.task_run_id,
                type: s.type,
                name: s.name,
                timestamp: s.timestamp,
                message: s.message,
                data: s.data === null || s.data === undefined ? null : JSON.stringify(s.data),
                state_details: JSON.stringify(s.state_details)
              }))
            )}
            ON CONFLICT DO NOTHING
          `
        })
      )
    })

    return { record } as const
  })
}) {}
