/** What status events say about deployments, work queues and work pools, read in one query per kind. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export interface DeploymentContext {
  readonly id: string
  readonly name: string
  readonly flow_id: string | null
  readonly flow_name: string | null
  readonly work_queue_id: string | null
  readonly work_queue_name: string | null
  readonly work_pool_id: string | null
  readonly work_pool_name: string | null
  readonly work_pool_type: string | null
  readonly storage_document_id: string | null
  readonly infrastructure_document_id: string | null
  readonly concurrency_limit_id: string | null
}

export interface QueueContext {
  readonly id: string
  readonly name: string
  readonly work_pool_id: string | null
  readonly work_pool_name: string | null
  readonly work_pool_type: string | null
}

export interface PoolContext {
  readonly id: string
  readonly name: string
  readonly type: string | null
}

export class StatusResourcesRepo extends Effect.Service<StatusResourcesRepo>()("baton/StatusResourcesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const none = <A>() => Effect.succeed([] as ReadonlyArray<A>)

    const deployments = (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? none<DeploymentContext>()
        : sql<DeploymentContext>`
            SELECT d.id, d.name, d.flow_id, f.name AS flow_name, d.work_queue_id, q.name AS work_queue_name,
                   p.id AS work_pool_id, p.name AS work_pool_name, p.type AS work_pool_type,
                   d.storage_document_id, d.infrastructure_document_id, d.concurrency_limit_id
            FROM deployment d
            LEFT JOIN flow f ON f.id = d.flow_id
            LEFT JOIN work_queue q ON q.id = d.work_queue_id
            LEFT JOIN work_pool p ON p.id = q.work_pool_id
            WHERE d.id = ANY(${ids}::uuid[])
          `

    const queues = (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? none<QueueContext>()
        : sql<QueueContext>`
            SELECT q.id, q.name, p.id AS work_pool_id, p.name AS work_pool_name, p.type AS work_pool_type
            FROM work_queue q LEFT JOIN work_pool p ON p.id = q.work_pool_id
            WHERE q.id = ANY(${ids}::uuid[])
          `

    const pools = (ids: ReadonlyArray<string>) =>
      ids.length === 0 ? none<PoolContext>() : sql<PoolContext>`SELECT id, name, type FROM work_pool WHERE id = ANY(${ids}::uuid[])`

    return { deployments, queues, pools } as const
  })
}) {}
