/**
 * Finding the work queue a deployment or run names, the reference's way: a pool and queue name, a
 * pool alone (its default queue), or a queue name alone (in the default agent pool, created on
 * demand so deployments written before work pools keep working).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { NotFound } from "../domain/errors.ts"
import { WorkQueuesRepo } from "./queues-repo.ts"
import { AGENT_POOL_TYPE, WorkPoolsRepo } from "./repo.ts"

export const DEFAULT_AGENT_POOL = "default-agent-pool"

export const workPoolNotFound = (name: string) => new NotFound({ detail: `Work pool "${name}" not found.` })

export class WorkQueueLookup extends Effect.Service<WorkQueueLookup>()("baton/WorkQueueLookup", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const pools = yield* WorkPoolsRepo
    const queues = yield* WorkQueuesRepo

    const pool = (name: string) =>
      Effect.flatMap(Effect.orDie(pools.readPoolByName(name)), (found) =>
        found === undefined ? Effect.fail(workPoolNotFound(name)) : Effect.succeed(found)
      )

    /** The pool's default queue; 404 without such a pool. */
    const defaultQueue = (poolName: string) =>
      Effect.flatMap(pool(poolName), (found) => Effect.map(Effect.orDie(queues.readQueue(found.default_queue_id!)), (q) => q!))

    /** The queue of that name in the pool: created when missing and `create` is set; 404 otherwise. */
    const queueInPool = (poolName: string, queueName: string, options: { readonly create: boolean }) =>
      Effect.gen(function* () {
        const existing = yield* Effect.orDie(queues.readQueueByName(poolName, queueName))
        if (existing !== undefined) return existing
        if (!options.create) {
          return yield* new NotFound({ detail: `Work pool queue '${poolName}/${queueName}' not found.` })
        }
        const found = yield* pool(poolName)
        return yield* Effect.orDie(queues.createQueue(found.id, { name: queueName }))
      })

    /** A queue named without a pool: the default agent pool's, or (without that pool) the first of any pool. */
    const queueWithoutPool = (name: string) =>
      Effect.orDie(
        Effect.gen(function* () {
          const agentPool = yield* pools.readPoolByName(DEFAULT_AGENT_POOL)
          const queue = agentPool === undefined
            ? yield* queues.readAnyQueueByName(name)
            : yield* queues.readQueueByName(DEFAULT_AGENT_POOL, name)
          return { agentPool, queue }
        })
      )

    /** A queue named without a pool, as `queueWithoutPool` finds it, else created in the default agent pool. */
    const ensureQueue = (name: string) =>
      Effect.orDie(
        Effect.gen(function* () {
          const { agentPool, queue: existing } = yield* queueWithoutPool(name)
          if (existing !== undefined) return existing
          const target = agentPool ?? (yield* pools.createPool({ name: DEFAULT_AGENT_POOL, type: AGENT_POOL_TYPE }))
          if (name === "default") return (yield* queues.readQueue(target.default_queue_id!))!
          return yield* queues.createQueue(target.id, { name, priority: 1 })
        })
      )

    /**
     * The queue a deployment is assigned to: pool and queue (created in the pool when missing),
     * pool only (its default queue), queue only (ensured in the default agent pool); null for neither.
     */
    const forDeployment = (names: { readonly work_pool_name?: string | null | undefined; readonly work_queue_name?: string | null | undefined }) =>
      sql.withTransaction(
        Effect.gen(function* () {
          if (names.work_pool_name && names.work_queue_name) {
            return yield* queueInPool(names.work_pool_name, names.work_queue_name, { create: true })
          }
          if (names.work_pool_name) return yield* defaultQueue(names.work_pool_name)
          if (names.work_queue_name) return yield* ensureQueue(names.work_queue_name)
          return null
        })
      ).pipe(Effect.catchTag("SqlError", Effect.die))

    return { pool, defaultQueue, queueInPool, queueWithoutPool, ensureQueue, forDeployment } as const
  }),
  dependencies: [WorkPoolsRepo.Default, WorkQueuesRepo.Default]
}) {}
