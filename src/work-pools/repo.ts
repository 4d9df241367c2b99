/** Work pools and their queues in SQL. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"

export interface WorkPoolRow {
  readonly id: string
  readonly created: Date
  readonly updated: Date
  readonly name: string
  readonly description: string | null
  readonly type: string
  readonly base_job_template: Record<string, unknown>
  readonly is_paused: boolean
  readonly default_queue_id: string | null
  readonly concurrency_limit: number | null
  readonly status: string
}

export interface WorkQueueRow {
  readonly id: string
  readonly created: Date
  readonly updated: Date
  readonly name: string
  /** The legacy filter of queues made before work pools. */
  readonly filter: { readonly tags: ReadonlyArray<string> | null; readonly deployment_ids: ReadonlyArray<string> | null } | null
  readonly description: string
  readonly is_paused: boolean
  readonly concurrency_limit: number | null
  readonly priority: number
  readonly last_polled: Date | null
  readonly status: string
  readonly work_pool_id: string
  /** Joined from the queue's pool. */
  readonly work_pool_name: string
}

export interface NewWorkPool {
  readonly name: string
  readonly type: string
  readonly description?: string | null
  readonly base_job_template?: Record<string, unknown>
  readonly is_paused?: boolean
  readonly concurrency_limit?: number | null
}

export interface NewWorkQueue {
  readonly name: string
  readonly description?: string
  /** Omitted: the first free priority. Given: taken, and the pool's queues from it on move down one. */
  readonly priority?: number | null
}

export class WorkPoolsRepo extends Effect.Service<WorkPoolsRepo>()("baton/WorkPoolsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const selectQueues = sql`
      SELECT work_queue.*, work_pool.name AS work_pool_name
      FROM work_queue JOIN work_pool ON work_pool.id = work_queue.work_pool_id
    `

    const readPoolByName = (name: string) =>
      Effect.map(sql<WorkPoolRow>`SELECT * FROM work_pool WHERE name = ${name}`, (rows) => rows[0])

    const readQueue = (id: string) =>
      Effect.map(sql<WorkQueueRow>`${selectQueues} WHERE work_queue.id = ${id}`, (rows) => rows[0])

    const readQueueByName = (poolName: string, queueName: string) =>
      Effect.map(
        sql<WorkQueueRow>`${selectQueues} WHERE work_pool.name = ${poolName} AND work_queue.name = ${queueName}`,
        (rows) => rows[0]
      )

    /** The first queue named `name`, in any pool. */
    const readAnyQueueByName = (name: string) =>
      Effect.map(sql<WorkQueueRow>`${selectQueues} WHERE work_queue.name = ${name} ORDER BY work_queue.id LIMIT 1`, (rows) => rows[0])

    /** Adds a queue to a pool; priorities stay unique within the pool. Call inside a transaction. */
    const createQueue = Effect.fn("WorkPoolsRepo.createQueue")(function* (poolId: string, queue: NewWorkQueue) {
      const id = yield* newId
      const at = yield* now
      let priority = queue.priority ?? null
      if (priority === null) {
        const taken = yield* sql<{ priority: number }>`
          SELECT priority FROM work_queue WHERE work_pool_id = ${poolId} ORDER BY priority
        `
        // The first gap in 1, 2, 3 … or one past the last.
        priority = taken.findIndex((row, i) => row.priority !== i + 1) + 1 || taken.length + 1
      } else {
        yield* sql`
          UPDATE work_queue SET priority = priority + 1, updated = ${at}
          WHERE work_pool_id = ${poolId} AND priority >= ${priority}
        `
      }
      yield* sql`
        INSERT INTO work_queue (id, created, updated, name, description, priority, work_pool_id)
        VALUES (${id}, ${at}, ${at}, ${queue.name}, ${queue.description ?? ""}, ${priority}, ${poolId})
      `
      return (yield* readQueue(id))!
    })

    /** Creates a pool with its `default` queue. Call inside a transaction. */
    const createPool = Effect.fn("WorkPoolsRepo.createPool")(function* (pool: NewWorkPool) {
      const id = yield* newId
      const at = yield* now
      yield* sql`
        INSERT INTO work_pool (id, created, updated, name, description, type, base_job_template, is_paused,
                               concurrency_limit, status)
        VALUES (${id}, ${at}, ${at}, ${pool.name}, ${pool.description ?? null}, ${pool.type},
                ${JSON.stringify(pool.base_job_template ?? {})}::jsonb, ${pool.is_paused ?? false},
                ${pool.concurrency_limit ?? null}, ${pool.is_paused ? "PAUSED" : "NOT_READY"})
      `
      const queue = yield* createQueue(id, { name: "default", description: "The work pool's default queue." })
      yield* sql`UPDATE work_pool SET default_queue_id = ${queue.id} WHERE id = ${id}`
      return { ...(yield* readPoolByName(pool.name))!, default_queue_id: queue.id }
    })

    /**
     * Queues whose (legacy) filter takes the deployment: no filter, or its tags all among the
     * deployment's and its deployment ids naming it (an empty or missing criterion takes any).
     */
    const queuesAccepting = (deployment: { readonly id: string; readonly tags: ReadonlyArray<string> }) =>
      sql<WorkQueueRow>`
        ${selectQueues}
        WHERE work_queue.filter IS NULL OR work_queue.filter = 'null'::jsonb OR (
          (jsonb_typeof(work_queue.filter -> 'tags') IS DISTINCT FROM 'array'
            OR ${JSON.stringify(deployment.tags)}::jsonb @> (work_queue.filter -> 'tags'))
          AND (jsonb_typeof(work_queue.filter -> 'deployment_ids') IS DISTINCT FROM 'array'
            OR work_queue.filter -> 'deployment_ids' = '[]'::jsonb
            OR (work_queue.filter -> 'deployment_ids') ? ${deployment.id}))
        ORDER BY work_pool.name, work_queue.priority, work_queue.name
      `

    return { readPoolByName, readQueue, readQueueByName, readAnyQueueByName, createQueue, createPool, queuesAccepting } as const
  })
}) {}
