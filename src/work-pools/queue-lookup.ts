/**
 * Finding the work queue a deployment or run names, the reference's way: a pool and queue name, a
 * pool alone (its default queue), or a queue name alone (in the default agent pool, created on
 * demand so deployments written before work pools keep working).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { inTransaction } from "../database/errors.ts"
import { orFail } from "../domain/errors.ts"
import { poolQueueNotFound, WorkPoolConflict, workPoolNotFound } from "./errors.ts"
import { WorkQueuesRepo } from "./queues-repo.ts"
import { AGENT_POOL_TYPE, WorkPoolsRepo } from "./repo.ts"

export const DEFAULT_AGENT_POOL = "default-agent-pool"

/** Kept where it was for deployments/service.ts; the error is work-pools/errors.ts's. */

/**
 * A queue (or the default agent pool) created on demand that another request created at the same
 * moment: the reference answers its integrity conflict, not the name-taken words of the create routes.
 */
const raced = () => new WorkPoolConflict()

export class WorkQueueLookup extends Effect.Service<WorkQueueLookup>()("baton/WorkQueueLookup", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const pools = yield* WorkPoolsRepo
    const queues = yield* WorkQueuesRepo

    const pool = (name: string) => pools.findByName(name).pipe(orFail(() => workPoolNotFound(name)))

    /** The pool's default queue; WorkPoolNotFound without such a pool. */
    const defaultQueue = (poolName: string) => queues.findDefault(poolName).pipe(orFail(() => workPoolNotFound(poolName)))

    /** The queue of that name in the pool; WorkQueueNotFound without it. */
    const queueInPool = (poolName: string, queueName: string) =>
      queues.findByName(poolName, queueName).pipe(orFail(() => poolQueueNotFound(poolName, queueName)))

    /** The queue of that name in the pool, created when missing; WorkPoolNotFound without such a pool. */
    const ensureQueueInPool = (poolName: string, queueName: string) =>
      Effect.gen(function* () {
        const existing = yield* queues.findByName(poolName, queueName)
        if (Option.isSome(existing)) return existing.value
        const found = yield* pool(poolName)
        return yield* queues.createQueue(found.id, { name: queueName }).pipe(Effect.catchTag("WorkQueueNameTaken", raced))
      })

    /** A queue named without a pool: the default agent pool's, or (without that pool) the first of any pool. */
    const queueWithoutPool = (name: string) =>
      Effect.gen(function* () {
        const agentPool = yield* pools.findByName(DEFAULT_AGENT_POOL)
        const queue = Option.isNone(agentPool)
          ? yield* queues.findAnyByName(name)
          : yield* queues.findByName(DEFAULT_AGENT_POOL, name)
        return { agentPool, queue }
      })

    /** A queue named without a pool, as `queueWithoutPool` finds it, else created in the default agent pool. */
    const ensureQueue = (name: string) =>
      Effect.gen(function* () {
        const { agentPool, queue: existing } = yield* queueWithoutPool(name)
        if (Option.isSome(existing)) return existing.value
        if (Option.isNone(agentPool)) {
          const created = yield* pools.createPool({ name: DEFAULT_AGENT_POOL, type: AGENT_POOL_TYPE })
          if (name === "default") return created.defaultQueue
          return yield* queues.createQueue(created.pool.id, { name, priority: 1 })
        }
        // The agent pool's default queue, renamed: still the one "default" names.
        if (name === "default") return yield* defaultQueue(DEFAULT_AGENT_POOL)
        return yield* queues.createQueue(agentPool.value.id, { name, priority: 1 })
      }).pipe(Effect.catchTags({ WorkPoolNameTaken: raced, WorkQueueNameTaken: raced }))

    /**
     * The queue a deployment is assigned to: pool and queue (created in the pool when missing),
     * pool only (its default queue), queue only (ensured in the default agent pool); null for neither.
     */
    const forDeployment = (names: { readonly work_pool_name?: string | null | undefined; readonly work_queue_name?: string | null | undefined }) =>
      inTransaction(
        sql,
        Effect.gen(function* () {
          if (names.work_pool_name && names.work_queue_name) {
            return yield* ensureQueueInPool(names.work_pool_name, names.work_queue_name)
          }
          if (names.work_pool_name) return yield* defaultQueue(names.work_pool_name)
          if (names.work_queue_name) return yield* ensureQueue(names.work_queue_name)
          return null
        })
      )

    return { pool, defaultQueue, queueInPool, ensureQueueInPool, queueWithoutPool, ensureQueue, forDeployment } as const
  }),
  dependencies: [WorkPoolsRepo.Default, WorkQueuesRepo.Default]
}) {}
