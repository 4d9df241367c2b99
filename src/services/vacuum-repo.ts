/** What the database vacuum deletes, a batch at a time. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const TERMINAL = ["COMPLETED", "FAILED", "CANCELLED", "CRASHED"]

export class VacuumRepo extends Effect.Service<VacuumRepo>()("baton/VacuumRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /**
     * Deletes up to `limit` flow runs that ended (in a terminal state) before `before`, with their
     * task runs and states (by cascade), logs and artifacts; artifact collections whose latest
     * artifact went move to the newest artifact of their key left, or go. How many runs.
     */
    const deleteEndedRuns = (before: Date, limit: number) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const runs = yield* sql<{ id: string }>`
            DELETE FROM flow_run WHERE id IN (
              SELECT id FROM flow_run
              WHERE end_time < ${before} AND state_type = ANY(${TERMINAL}::text[])
              ORDER BY end_time LIMIT ${limit})
            RETURNING id
          `
          if (runs.length === 0) return 0
          const ids = runs.map((r) => r.id)
          yield* sql`DELETE FROM log WHERE flow_run_id = ANY(${ids}::uuid[])`
          const artifacts = yield* sql<{ key: string | null }>`
            DELETE FROM artifact WHERE flow_run_id = ANY(${ids}::uuid[]) RETURNING key
          `
          const keys = [...new Set(artifacts.flatMap((a) => (a.key === null ? [] : [a.key])))]
          if (keys.length > 0) {
            yield* sql`
              UPDATE artifact_collection c SET latest_id = newest.id, type = newest.type, description = newest.description,
                data = newest.data, metadata_ = newest.metadata_, flow_run_id = newest.flow_run_id, task_run_id = newest.task_run_id
              FROM (
                SELECT DISTINCT ON (key) key, id, type, description, data, metadata_, flow_run_id, task_run_id
                FROM artifact WHERE key = ANY(${keys}::text[]) ORDER BY key, created DESC, id DESC
              ) newest
              WHERE c.key = newest.key AND NOT EXISTS (SELECT 1 FROM artifact a WHERE a.id = c.latest_id)
            `
            yield* sql`
              DELETE FROM artifact_collection c
              WHERE c.key = ANY(${keys}::text[]) AND NOT EXISTS (SELECT 1 FROM artifact a WHERE a.id = c.latest_id)
            `
          }
          return runs.length
        })
      )

    return { deleteEndedRuns } as const
  })
}) {}
