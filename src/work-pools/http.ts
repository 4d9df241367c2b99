import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { paginated, resolveLimit } from "../domain/pagination.ts"
import { now } from "../domain/time.ts"
import { BatonApi } from "../api.ts"
import { orFail } from "../domain/errors.ts"
import { jsonText } from "../http/responses.ts"
import { workerFlowRunsJson } from "../flow-runs/wire.ts"
import { WorkerNotFound, WorkPoolNotFound } from "./errors.ts"
import { PollRepo } from "./poll-repo.ts"
import { WorkPools } from "./pools.ts"
import { WorkQueuesRepo } from "./queues-repo.ts"
import { WorkPoolsRepo } from "./repo.ts"
import { RunsDue } from "./runs-due.ts"
import { slotSummary } from "./slots.ts"

/**
 * Held polls answer at once when the API stops: this group's scope closes before the HTTP server's,
 * whose close would otherwise wait for them.
 */
const HeldPollsEndLive = Layer.scopedDiscard(Effect.flatMap(RunsDue, (due) => Effect.addFinalizer(() => due.stop)))

const WorkPoolsGroupLive = apiGroup(BatonApi, "workPools", (handlers) =>
  Effect.gen(function* () {
    const service = yield* WorkPools
    const pools = yield* WorkPoolsRepo
    const queues = yield* WorkQueuesRepo
    const poll = yield* PollRepo
    return handlers
      .handle("create", ({ payload }) => service.create(payload))
      .handle("read", ({ path }) => service.record(path.name))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          pools.filter({ filter: payload.work_pools, offset: payload.offset, limit })
        )
      )
      .handle("count", ({ payload }) => pools.count(payload.work_pools))
      .handle("update", ({ path, payload }) => service.update(path.name, payload))
      .handle("delete", ({ path }) => service.remove(path.name))
      .handle("concurrencyStatus", ({ path, payload }) =>
        Effect.gen(function* () {
          // The reference words this one differently from its other routes.
          const found = yield* pools.findByName(path.name).pipe(
            orFail(() => new WorkPoolNotFound({ detail: `Work pool '${path.name}' not found.` }))
          )
          const limit = yield* resolveLimit(payload.limit)
          const ids = yield* queues.idsInPool(found.id)
          const page = yield* queues.filter({ poolId: found.id, filter: null, offset: (payload.page - 1) * limit, limit, slots: "pool" })
          const counts = yield* poll.slotCounts(ids, { withCancelling: false })
          const holders = yield* poll.slotHolders(page.map((q) => q.id), { withCancelling: false, offset: 0, limit: payload.flow_run_limit })
          const at = yield* now
          const queueDetails = page.map((queue) => ({
            queue_id: queue.id,
            queue_name: queue.name,
            active_slots: counts.get(queue.id) ?? 0,
            concurrency_limit: queue.concurrency_limit,
            flow_runs: holders.filter((h) => h.work_queue_id === queue.id).map((h) => slotSummary(h, at)),
            flow_run_count: counts.get(queue.id) ?? 0
          }))
          const total = [...counts.values()].reduce((a, b) => a + b, 0)
          return {
            ...paginated(queueDetails, ids.length, limit, payload.page),
            queues: queueDetails,
            active_slots: total,
            concurrency_limit: found.concurrency_limit
          }
        })
      )
      .handle("scheduledFlowRuns", ({ path, payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          service.scheduledRuns(path.name, {
            queueNames: payload.work_queue_names,
            scheduledBefore: payload.scheduled_before ?? null,
            scheduledAfter: payload.scheduled_after ?? null,
            limit,
            waitSeconds: payload.wait_seconds
          }).pipe(
            // Every worker's poll: written straight to JSON (flow-runs/wire.ts), the schema's encoding without its cost.
            Effect.map((runs) => jsonText(workerFlowRunsJson(runs)))
          )
        )
      )
      .handle("createQueue", ({ path, payload }) => service.createQueue(path.work_pool_name, payload))
      .handle("filterQueues", ({ path, payload }) =>
        Effect.gen(function* () {
          const found = yield* service.pool(path.work_pool_name)
          const limit = yield* resolveLimit(payload.limit)
          return yield* queues.filter({ poolId: found.id, filter: payload.work_queues, offset: payload.offset, limit, slots: "pool" })
        })
      )
      .handle("readQueue", ({ path }) => service.readQueue(path.work_pool_name, path.name))
      .handle("updateQueue", ({ path, payload }) =>
        Effect.gen(function* () {
          yield* service.pool(path.work_pool_name)
          const queue = yield* service.queueIn(path.work_pool_name, path.name)
          yield* service.updateQueue(queue, payload, { rebalance: true })
        })
      )
      .handle("deleteQueue", ({ path }) =>
        Effect.gen(function* () {
          yield* service.pool(path.work_pool_name)
          const queue = yield* service.queueIn(path.work_pool_name, path.name)
          yield* service.removeQueue(queue)
        })
      )
      .handle("heartbeat", ({ path, payload }) => service.heartbeat(path.work_pool_name, payload))
      .handle("filterWorkers", ({ path, payload }) =>
        Effect.gen(function* () {
          const found = yield* service.pool(path.work_pool_name)
          const limit = yield* resolveLimit(payload.limit)
          return yield* pools.workers({ poolId: found.id, filter: payload.workers, offset: payload.offset, limit })
        })
      )
      .handle("deleteWorker", ({ path }) =>
        Effect.gen(function* () {
          const found = yield* service.pool(path.work_pool_name)
          if (!(yield* pools.removeWorker(found.id, path.name))) return yield* new WorkerNotFound()
        })
      )
  })
)

export const WorkPoolsLive = Layer.merge(WorkPoolsGroupLive, HeldPollsEndLive).pipe(
  Layer.provide([PollRepo.Default, RunsDue.Default, WorkPools.Default, WorkPoolsRepo.Default, WorkQueuesRepo.Default])
)
