/** The SQL of a task run's transitions: the facts its rules read, and what a stored state leaves behind. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { newId } from "../domain/ids.ts"
import type { State, StateType } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { type StateRow, toState } from "./repo.ts"

/** The task run's flow run, as the task rules see it. */
export interface EnclosingFlowRun {
  readonly id: string
  readonly state_type: StateType | null
  readonly run_count: number
  readonly pause_timeout: Date | null
  readonly pause_reschedule: boolean
}

// Rows typed and decoded by hand, not through a row schema (SqlSchema): task run transitions are on the hot path (the bench's run lifecycle).
export class TaskRunFactsRepo extends Effect.Service<TaskRunFactsRepo>()("baton/TaskRunFactsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The flow run a task run belongs to, with its current state's pause details. */
    const flowRun = (flowRunId: string | null) =>
      flowRunId === null
        ? Effect.succeed(null)
        : Effect.map(
          sql<{ id: string; state_type: StateType | null; run_count: number; state_details: { pause_timeout?: string | null; pause_reschedule?: boolean } | null }>`
            SELECT flow_run.id, flow_run.state_type, flow_run.run_count, flow_run_state.state_details
            FROM flow_run LEFT JOIN flow_run_state ON flow_run_state.id = flow_run.state_id
            WHERE flow_run.id = ${flowRunId}
          `,
          (rows): EnclosingFlowRun | null => {
            const row = rows[0]
            return row === undefined
              ? null
              : {
                id: row.id,
                state_type: row.state_type,
                run_count: row.run_count,
                pause_timeout: row.state_details?.pause_timeout ? new Date(row.state_details.pause_timeout) : null,
                pause_reschedule: row.state_details?.pause_reschedule === true
              }
          }
        )

    /** The newest unexpired Completed state cached under `key`. */
    const cachedState = (key: string | null) =>
      key === null
        ? Effect.succeed(null)
        : Effect.gen(function* () {
          const rows = yield* sql<StateRow>`
            SELECT task_run_state.* FROM task_run_state_cache
            JOIN task_run_state ON task_run_state.id = task_run_state_cache.task_run_state_id
            WHERE task_run_state_cache.cache_key = ${key}
              AND (task_run_state_cache.cache_expiration IS NULL OR task_run_state_cache.cache_expiration > ${yield* now})
            ORDER BY task_run_state_cache.created DESC
            LIMIT 1
          `
          return rows[0] === undefined ? null : toState(rows[0])
        })

    /** After a stored state: remember a cached result, and which flow run attempt the task belongs to. */
    const afterStore = (run: { readonly id: string; readonly flow_run_id: string | null }, state: State) =>
      Effect.gen(function* () {
        if (state.type === "COMPLETED" && state.state_details.cache_key !== null) {
          yield* sql`
            INSERT INTO task_run_state_cache (id, created, cache_key, cache_expiration, task_run_state_id)
            VALUES (${yield* newId}, ${yield* now}, ${state.state_details.cache_key}, ${state.state_details.cache_expiration}, ${state.id})
          `
        }
        if (state.type === "RUNNING" && run.flow_run_id !== null) {
          yield* sql`
            UPDATE task_run SET flow_run_run_count = (SELECT run_count FROM flow_run WHERE id = ${run.flow_run_id})
            WHERE id = ${run.id}
          `
        }
      })

    return sqlErrorsAsDefects({ flowRun, cachedState, afterStore })
  })
}) {}
