/** The late runs service's query. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"

export class LateRunsRepo extends Effect.Service<LateRunsRepo>()("baton/LateRunsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /**
     * Runs still named Scheduled whose time passed before `before`, at most `limit`. A run another
     * transaction holds (a transition in progress, an overlapping pass on another process) is left
     * for the next pass rather than waited for.
     */
    const overdue = (before: Date, limit: number) =>
      sql<{ id: string; next_scheduled_start_time: Date; cancel_new_limit_full: boolean }>`
        SELECT flow_run.id, flow_run.next_scheduled_start_time,
          -- Its deployment's concurrency limit is full and turns new runs away.
          coalesce(deployment.concurrency_options ->> 'collision_strategy' = 'CANCEL_NEW'
            AND gcl.active_slots >= gcl."limit", false) AS cancel_new_limit_full
        FROM flow_run
          LEFT JOIN deployment ON deployment.id = flow_run.deployment_id
          LEFT JOIN concurrency_limit_v2 gcl ON gcl.id = deployment.concurrency_limit_id
        WHERE flow_run.state_type = 'SCHEDULED' AND flow_run.state_name = 'Scheduled'
          AND flow_run.next_scheduled_start_time <= ${before}
        ORDER BY flow_run.next_scheduled_start_time
        LIMIT ${limit}
        FOR UPDATE OF flow_run SKIP LOCKED
      `

    return sqlErrorsAsDefects({ overdue })
  })
}) {}
