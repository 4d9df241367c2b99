/**
 * The cancellation cleanup service's queries: what cancelled runs and deleted deployments leave
 * behind. Each skips the runs another transaction holds (a transition in progress, an overlapping
 * pass on another process): they are left for the next pass rather than waited for.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import type { StateType } from "../domain/states.ts"

export class CancellationCleanupRepo extends Effect.Service<CancellationCleanupRepo>()("baton/CancellationCleanupRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /**
     * Unfinished task runs of flow runs Cancelled since `since`, at most `limit`. The runs Cancelled
     * since then come from their own index (migration 0031).
     */
    const unfinishedTaskRuns = (since: Date, limit: number) =>
      Effect.map(
        sql<{ id: string }>`
          SELECT task_run.id FROM task_run JOIN flow_run ON flow_run.id = task_run.flow_run_id
          WHERE flow_run.state_type = 'CANCELLED' AND flow_run.end_time >= ${since}
            AND task_run.state_type IN ('SCHEDULED', 'PENDING', 'RUNNING', 'PAUSED', 'CANCELLING')
          ORDER BY task_run.id
          LIMIT ${limit}
          FOR UPDATE OF task_run SKIP LOCKED
        `,
        (rows) => rows.map((r) => r.id)
      )

    /**
     * Unfinished subflow runs whose parent flow run (the flow run of the task run that started them) is
     * Cancelled, with what cancelling them needs: at most `limit`. The unfinished subflows come from
     * their own index (migration 0031), so a pass checks their parents only.
     */
    const orphanedSubflows = (limit: number) =>
      sql<{ id: string; deployment_id: string | null; state_type: StateType }>`
        SELECT sub.id, sub.deployment_id, sub.state_type FROM flow_run sub
          JOIN task_run parent_task ON parent_task.id = sub.parent_task_run_id
          JOIN flow_run parent ON parent.id = parent_task.flow_run_id
        WHERE sub.state_type IN ('SCHEDULED', 'PENDING', 'RUNNING', 'PAUSED', 'CANCELLING')
          AND parent.state_type = 'CANCELLED'
        ORDER BY sub.id
        LIMIT ${limit}
        FOR UPDATE OF sub SKIP LOCKED
      `

    /**
     * Runs waiting in Scheduled for a deployment that no longer exists, at most `limit`. The
     * deployments of waiting runs are stepped through one index probe each (migration 0030), so a
     * pass costs a probe per such deployment rather than a read of every waiting run.
     */
    const scheduledWithoutDeployment = (limit: number) =>
      Effect.map(
        sql<{ id: string }>`
          WITH RECURSIVE waiting AS (
            (SELECT deployment_id FROM flow_run
              WHERE state_type = 'SCHEDULED' AND deployment_id IS NOT NULL
              ORDER BY deployment_id LIMIT 1)
            UNION ALL
            SELECT (SELECT next.deployment_id FROM flow_run next
                WHERE next.state_type = 'SCHEDULED' AND next.deployment_id > waiting.deployment_id
                ORDER BY next.deployment_id LIMIT 1)
            FROM waiting WHERE waiting.deployment_id IS NOT NULL
          )
          SELECT id FROM flow_run
          WHERE state_type = 'SCHEDULED' AND deployment_id IN (
            SELECT deployment_id FROM waiting
            WHERE deployment_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM deployment WHERE deployment.id = waiting.deployment_id))
          ORDER BY id
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        `,
        (rows) => rows.map((r) => r.id)
      )

    return sqlErrorsAsDefects({ unfinishedTaskRuns, orphanedSubflows, scheduledWithoutDeployment })
  })
}) {}
