/**
 * The work pool rules: reserved names, job templates and their defaults, pause and readiness,
 * pool-scoped queues with unique priorities, workers' heartbeats, and the worker poll.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { now } from "../domain/time.ts"
import { FlowRunsRepo } from "../flow-runs/repo.ts"
import { inTransaction } from "../database/errors.ts"
import { orFail, ValidationError } from "../domain/errors.ts"
import { Settings } from "../settings/settings.ts"
import { checkJobVariables, describeFailure, referencesBlock } from "./job-variables.ts"
import { holdPoll } from "./long-poll.ts"
import { PollRepo, type PollTarget } from "./poll-repo.ts"
import { WorkQueuesRepo } from "./queues-repo.ts"
import { AGENT_POOL_TYPE, WorkPoolsRepo } from "./repo.ts"
import { RunsDue } from "./runs-due.ts"
import type { WorkPoolCreate, WorkPoolUpdate, WorkQueueCreate, WorkQueueUpdate } from "./schemas.ts"
import { DEFAULT_AGENT_POOL, WorkQueueLookup } from "./queue-lookup.ts"
import {
  DefaultQueueKept,
  JobDefaultsBlockNotFound,
  poolQueueNotFound,
  WorkPoolNameReserved,
  workPoolNotFound,
  WorkQueueNameTaken,
  WorkQueueNotFound
} from "./errors.ts"
import { traced } from "../domain/traced.ts"

const isReserved = (name: string) => name.toLowerCase().startsWith("prefect")

/**
 * A pool's job variable defaults must satisfy its variables schema (required ones aside). Defaults
 * that point at a block document are checked once blocks exist; until then no such document exists.
 */
const checkJobDefaults = (template: Record<string, unknown>) => {
  if (referencesBlock(template)) return Effect.fail(new JobDefaultsBlockNotFound())
  const check = checkJobVariables(template, {}, { ignoreRequired: true })
  if (check.valid) return Effect.void
  if (check.message.startsWith("Invalid schema:")) return Effect.fail(new ValidationError({ detail: check.message }))
  return Effect.fail(new ValidationError({ detail: `Validation failed for work pool's job variable defaults: ${describeFailure(check)}` }))
}

export class WorkPools extends Effect.Service<WorkPools>()("baton/WorkPools", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const pools = yield* WorkPoolsRepo
    const queues = yield* WorkQueuesRepo
    const poll = yield* PollRepo
    const runs = yield* FlowRunsRepo
    const due = yield* RunsDue
    const foreman = (yield* Settings).server.services.foreman

    const lookup = yield* WorkQueueLookup
    const pool = lookup.pool

    const record = (name: string) => pools.findRecord(name).pipe(orFail(() => workPoolNotFound(name)))

    const create = traced("WorkPools.create")(function* (body: WorkPoolCreate) {
      if (isReserved(body.name)) {
        return yield* new WorkPoolNameReserved({ detail: "Work pools starting with 'Prefect' are reserved for internal use." })
      }
      yield* checkJobDefaults(body.base_job_template)
      yield* inTransaction(sql, pools.createPool(body))
      return yield* record(body.name)
    })

    const update = traced("WorkPools.update")(function* (name: string, body: WorkPoolUpdate) {
      const sent = Object.keys(body).filter((key) => body[key as keyof WorkPoolUpdate] !== undefined)
      if (isReserved(name) && sent.some((key) => key !== "is_paused" && key !== "concurrency_limit")) {
        return yield* new WorkPoolNameReserved({
          detail: "Work pools starting with 'Prefect' are reserved for internal use and can only be updated to set concurrency limits or pause."
        })
      }
      const found = yield* pool(name)
      const changes: Record<string, unknown> = {}
      if (body.description !== undefined) changes.description = body.description
      if (body.concurrency_limit !== undefined) changes.concurrency_limit = body.concurrency_limit
      // null for a column that has no null is read as "leave it".
      if (body.base_job_template != null) changes.base_job_template = JSON.stringify(body.base_job_template)
      if (body.storage_configuration != null) changes.storage_configuration = JSON.stringify(body.storage_configuration)
      if (body.is_paused != null) {
        changes.is_paused = body.is_paused
        if (found.type !== AGENT_POOL_TYPE) {
          changes.status = body.is_paused ? "PAUSED" : (yield* pools.hasOnlineWorker(found.id)) ? "READY" : "NOT_READY"
        }
      }
      yield* pools.update(found.id, changes)
    })

    const remove = traced("WorkPools.remove")(function* (name: string) {
      if (isReserved(name)) {
        return yield* new WorkPoolNameReserved({ detail: "Work pools starting with 'Prefect' are reserved for internal use and can not be deleted." })
      }
      const found = yield* pool(name)
      yield* pools.remove(found.id)
    })

    /** The queue's record; `missing` when it is gone (deleted since it was found). */
    const queueRecord = (id: string, slots: "pool" | "legacy", missing: () => WorkQueueNotFound) =>
      queues.findRecord(id, slots).pipe(orFail(missing))

    const createQueue = traced("WorkPools.createQueue")(function* (poolName: string, body: WorkQueueCreate) {
      const found = yield* pool(poolName)
      const queue = yield* inTransaction(sql, queues.createQueue(found.id, body)).pipe(
        Effect.catchTag("WorkQueueNameTaken", () =>
          new WorkQueueNameTaken({ detail: `A work queue with this name already exists in work pool '${poolName}'.` }))
      )
      return yield* queueRecord(queue.id, "pool", () => poolQueueNotFound(poolName, body.name))
    })

    /** A queue made without a pool goes to the default agent pool (created on demand). */
    const createAgentQueue = traced("WorkPools.createAgentQueue")(function* (body: WorkQueueCreate) {
      const queue = yield* inTransaction(sql, Effect.gen(function* () {
        const existing = yield* pools.findByName(DEFAULT_AGENT_POOL)
        if (Option.isNone(existing)) {
          const created = yield* pools.createPool({ name: DEFAULT_AGENT_POOL, type: AGENT_POOL_TYPE })
          if (body.name === "default") return created.defaultQueue
          return yield* queues.createQueue(created.pool.id, body)
        }
        return yield* queues.createQueue(existing.value.id, body)
      })).pipe(
        // The agent pool created by another request meanwhile: the reference's words for any name taken here.
        Effect.catchTag("WorkPoolNameTaken", () => new WorkQueueNameTaken())
      )
      return yield* queueRecord(queue.id, "legacy", () => new WorkQueueNotFound({ detail: "work queue not found" }))
    })

    const queueIn = (poolName: string, queueName: string) => lookup.queueInPool(poolName, queueName)

    const readQueue = (poolName: string, queueName: string) =>
      Effect.flatMap(queueIn(poolName, queueName), (q) => queueRecord(q.id, "pool", () => poolQueueNotFound(poolName, queueName)))

    /**
     * Changes a queue. Pausing makes it PAUSED; unpausing a PAUSED queue makes it READY when it was
     * polled lately, NOT_READY otherwise. A new priority moves the pool's other queues when `rebalance`.
     */
    const updateQueue = traced("WorkPools.updateQueue")(function* (
      queue: { readonly id: string; readonly work_pool_id: string; readonly status: string; readonly last_polled: Date | null },
      body: WorkQueueUpdate,
      options: { readonly rebalance: boolean }
    ) {
      const changes: Record<string, unknown> = {}
      if (body.name != null) changes.name = body.name
      if (body.description !== undefined) changes.description = body.description ?? ""
      if (body.concurrency_limit !== undefined) changes.concurrency_limit = body.concurrency_limit
      if (body.priority != null) changes.priority = body.priority
      if (body.last_polled !== undefined) changes.last_polled = body.last_polled
      if (body.filter !== undefined) changes.filter = body.filter === null ? null : JSON.stringify(body.filter)
      if (body.is_paused !== undefined) {
        changes.is_paused = body.is_paused
        if (body.is_paused && queue.status !== "PAUSED") changes.status = "PAUSED"
        if (!body.is_paused && queue.status === "PAUSED") {
          const polled = body.last_polled !== undefined ? body.last_polled : queue.last_polled
          const at = yield* now
          const fresh = polled !== null && at.getTime() - polled.getTime() <= foreman.work_queue_last_polled_timeout_seconds * 1000
          changes.status = fresh ? "READY" : "NOT_READY"
        }
      }
      // A new name another queue of the pool has: WorkPoolConflict, from the repository.
      yield* inTransaction(sql, Effect.gen(function* () {
        yield* queues.update(queue.id, changes)
        if (options.rebalance && body.priority != null) {
          yield* queues.rebalancePriorities(queue.work_pool_id, new Map([[queue.id, body.priority]]))
        }
      }))
    })

    /** Deletes a queue; a pool's default queue stays. */
    const removeQueue = traced("WorkPools.removeQueue")(function* (queue: { readonly id: string; readonly work_pool_id: string }) {
      const owner = yield* pools.findById(queue.work_pool_id)
      if (Option.exists(owner, (found) => found.default_queue_id === queue.id)) return yield* new DefaultQueueKept()
      yield* queues.remove(queue.id)
    })

    /** A worker's heartbeat: ONLINE now; its pool, when NOT_READY, becomes READY. */
    const heartbeat = traced("WorkPools.heartbeat")(function* (
      poolName: string,
      worker: { readonly name: string; readonly heartbeat_interval_seconds?: number | null | undefined }
    ) {
      const found = yield* pool(poolName)
      yield* pools.heartbeat(found.id, worker)
      if (found.status === "NOT_READY") yield* pools.update(found.id, { status: "READY" })
    })

    /**
     * The worker poll: due runs of the pool's queues (those named, else all) by queue priority and
     * time; the queues and their deployments count as polled now. With `waitSeconds`, a poll that
     * finds nothing is held until a run becomes due or the wait ends (long-poll.ts).
     */
    const scheduledRuns = traced("WorkPools.scheduledRuns")(function* (
      poolName: string,
      options: {
        readonly queueNames: ReadonlyArray<string> | null | undefined
        readonly scheduledBefore: Date | null
        readonly scheduledAfter: Date | null
        readonly limit: number
        readonly waitSeconds?: number | undefined
      }
    ) {
      const names = options.queueNames && options.queueNames.length > 0 ? options.queueNames : undefined
      /** The named queues' check: the first one not in the pool answers 404. */
      const missingQueue = (queues: ReadonlyArray<{ readonly name: string }>) =>
        names?.find((name) => !queues.some((q) => q.name === name))
      if (!options.waitSeconds || options.waitSeconds <= 0) {
        // The poll that answers at once, in one statement: the pool and queues, the due runs, the queues polled.
        const at = yield* now
        const { along, listed } = poll.pollInOne(poolName, names, {
          scheduledBefore: options.scheduledBefore,
          scheduledAfter: options.scheduledAfter,
          limit: options.limit
        }, at)
        const found = yield* runs.readListedAlong<PollTarget>(along, listed).pipe(orFail(() => workPoolNotFound(poolName)))
        const missing = missingQueue(found.along.queues)
        if (missing !== undefined) return yield* poolQueueNotFound(poolName, missing)
        yield* poll.announcePolled(found.along.changed, at)
        // Found in a queue of the pool: the run's queue is that queue.
        return found.runs.map((run) => ({ work_pool_id: found.along.id, work_queue_id: run.work_queue_id!, flow_run: run }))
      }
      const target = yield* poll.findPollTarget(poolName, names).pipe(orFail(() => workPoolNotFound(poolName)))
      const missing = missingQueue(target.queues)
      if (missing !== undefined) return yield* poolQueueNotFound(poolName, missing)
      const queueIds = target.queues.map((q) => q.id)
      const pollOnce = (scheduledBefore: Date | null) =>
        Effect.gen(function* () {
          // The due runs found and read in one statement, in the poll's order.
          const dueRuns = yield* runs.readListed(poll.dueInPool({
            poolId: target.id,
            queueIds: names === undefined ? undefined : queueIds,
            scheduledBefore,
            scheduledAfter: options.scheduledAfter,
            limit: options.limit
          }))
          yield* poll.markPolled(queueIds, yield* now)
          // Found in a queue of the pool: the run's queue is that queue.
          return dueRuns.map((run) => ({ work_pool_id: target.id, work_queue_id: run.work_queue_id!, flow_run: run }))
        })
      return yield* holdPoll({
        queueIds,
        waitSeconds: options.waitSeconds,
        scheduledBefore: options.scheduledBefore,
        scheduledAfter: options.scheduledAfter,
        poll: pollOnce,
        nextScheduledTime: (after, notBefore) => poll.nextScheduledTime(queueIds, { after, notBefore }),
        due
      })
    })

    return { pool, record, create, update, remove, createQueue, createAgentQueue, queueIn, readQueue, updateQueue, removeQueue, heartbeat, scheduledRuns } as const
  }),
  dependencies: [
    FlowRunsRepo.Default,
    PollRepo.Default,
    RunsDue.Default,
    WorkPoolsRepo.Default,
    WorkQueueLookup.Default,
    WorkQueuesRepo.Default
  ]
}) {}
