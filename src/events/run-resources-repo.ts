/** What a run's events name besides the run: its flow, deployment, work queue and pool, parents, tags. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export interface RunContext {
  readonly id: string
  readonly name: string
  readonly run_count: number
  readonly tags: ReadonlyArray<string>
  readonly created_by: { readonly type?: string; readonly id?: string; readonly display_value?: string } | null
  readonly flow_run_id: string | null
  readonly flow_run_name: string | null
  readonly flow_run_tags: ReadonlyArray<string> | null
  readonly flow_id: string | null
  readonly flow_name: string | null
  readonly flow_tags: ReadonlyArray<string> | null
  readonly deployment_id: string | null
  readonly deployment_name: string | null
  readonly deployment_tags: ReadonlyArray<string> | null
  readonly work_queue_id: string | null
  readonly work_queue_name: string | null
  readonly work_pool_id: string | null
  readonly work_pool_name: string | null
  readonly work_pool_type: string | null
  readonly task_run_id: string | null
  readonly task_run_name: string | null
  readonly task_run_tags: ReadonlyArray<string> | null
}

export class RunResourcesRepo extends Effect.Service<RunResourcesRepo>()("baton/RunResourcesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The flow runs' contexts (the parent task run as `task_run_*`), in one query. */
    const flowRuns = (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([] as ReadonlyArray<RunContext>)
        : sql<RunContext>`
          SELECT fr.id, fr.name, fr.run_count, fr.tags, fr.created_by,
                 NULL::uuid AS flow_run_id, NULL::text AS flow_run_name, NULL::jsonb AS flow_run_tags,
                 f.id AS flow_id, f.name AS flow_name, f.tags AS flow_tags,
                 d.id AS deployment_id, d.name AS deployment_name, d.tags AS deployment_tags,
                 wq.id AS work_queue_id, wq.name AS work_queue_name,
                 wp.id AS work_pool_id, wp.name AS work_pool_name, wp.type AS work_pool_type,
                 tr.id AS task_run_id, tr.name AS task_run_name, tr.tags AS task_run_tags
          FROM flow_run fr
          JOIN flow f ON f.id = fr.flow_id
          LEFT JOIN deployment d ON d.id = fr.deployment_id
          LEFT JOIN work_queue wq ON wq.id = fr.work_queue_id
          LEFT JOIN work_pool wp ON wp.id = wq.work_pool_id
          LEFT JOIN task_run tr ON tr.id = fr.parent_task_run_id
          WHERE fr.id = ANY(${ids}::uuid[])
        `

    /** The task runs' contexts, through their flow run, in one query. */
    const taskRuns = (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([] as ReadonlyArray<RunContext>)
        : sql<RunContext>`
          SELECT tr.id, tr.name, tr.run_count, tr.tags, NULL::jsonb AS created_by,
                 fr.id AS flow_run_id, fr.name AS flow_run_name, fr.tags AS flow_run_tags,
                 f.id AS flow_id, f.name AS flow_name, f.tags AS flow_tags,
                 d.id AS deployment_id, d.name AS deployment_name, d.tags AS deployment_tags,
                 wq.id AS work_queue_id, wq.name AS work_queue_name,
                 wp.id AS work_pool_id, wp.name AS work_pool_name, wp.type AS work_pool_type,
                 NULL::uuid AS task_run_id, NULL::text AS task_run_name, NULL::jsonb AS task_run_tags
          FROM task_run tr
          LEFT JOIN flow_run fr ON fr.id = tr.flow_run_id
          LEFT JOIN flow f ON f.id = fr.flow_id
          LEFT JOIN deployment d ON d.id = fr.deployment_id
          LEFT JOIN work_queue wq ON wq.id = fr.work_queue_id
          LEFT JOIN work_pool wp ON wp.id = wq.work_pool_id
          WHERE tr.id = ANY(${ids}::uuid[])
        `

    return { flowRuns, taskRuns } as const
  })
}) {}
