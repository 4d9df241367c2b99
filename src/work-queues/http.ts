import { apiGroup } from "../http/group.ts"
import { Effect, Layer, Option } from "effect"
import { paginated, resolveLimit } from "../domain/pagination.ts"
import { now } from "../domain/time.ts"
import { FlowRunsRepo } from "../flow-runs/repo.ts"
import { BatonApi } from "../api.ts"
import { orFail } from "../domain/errors.ts"
import { Settings } from "../settings/settings.ts"
import { PollRepo } from "../work-pools/poll-repo.ts"
import { WorkQueueNotFound } from "../work-pools/errors.ts"
import { WorkPools } from "../work-pools/pools.ts"
import { WorkQueuesRepo } from "../work-pools/queues-repo.ts"
import { WorkQueueLookup } from "../work-pools/queue-lookup.ts"
import { slotSummary } from "../work-pools/slots.ts"

// The reference words a missing queue differently on each route.
const notFound = () => new WorkQueueNotFound({ detail: "work queue not found" })

export const WorkQueuesLive = apiGroup(BatonApi, "workQueues", (handlers) =>
  Effect.gen(function* () {
    const service = yield* WorkPools
    const queues = yield* WorkQueuesRepo
    const lookup = yield* WorkQueueLookup
    const poll = yield* PollRepo
    const runs = yield* FlowRunsRepo
    const timeout = (yield* Settings).server.services.foreman.work_queue_last_polled_timeout_seconds

    const queue = (id: string, missing: () => WorkQueueNotFound) => queues.find(id).pipe(orFail(missing))

    /** The queue's record (it may be gone since it was found: then `notFound`). */
    const record = (id: string) => queues.findRecord(id, "legacy").pipe(orFail(notFound))

    return handlers
      .handle("create", ({ payload }) => service.createAgentQueue(payload))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          queues.filter({ filter: payload.work_queues, offset: payload.offset, limit, slots: "legacy" })
        )
      )
      .handle("readByName", ({ path }) =>
        Effect.flatMap(lookup.queueWithoutPool(path.name), ({ queue: found }) =>
          Option.match(found, { onNone: () => Effect.fail(notFound()), onSome: (q) => record(q.id) })
        )
      )
      .handle("read", ({ path }) => Effect.flatMap(queue(path.id, notFound), (q) => record(q.id)))
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(queue(path.id, () => new WorkQueueNotFound({ detail: `Work Queue ${path.id} not found` })), (q) =>
          service.updateQueue(q, payload, { rebalance: false })
        )
      )
      .handle("delete", ({ path }) => Effect.flatMap(queue(path.id, notFound), (q) => service.removeQueue(q)))
      .handle("runs", ({ path, payload, headers }) =>
        Effect.gen(function* () {
          const found = yield* queue(path.id, () => new WorkQueueNotFound({ detail: `Work queue with id ${path.id} not found.` }))
          const limit = yield* resolveLimit(payload.limit)
          const ids = found.is_paused ? [] : yield* poll.dueInQueue(found, { scheduledBefore: payload.scheduled_before ?? null, limit })
          const due = yield* runs.readMany(ids)
          // The UI looks without counting as a poll.
          if (headers["x-prefect-ui"] !== true) {
            const at = yield* now
            yield* poll.markPolled([found.id], at)
          }
          return due
        })
      )
      .handle("concurrencyStatus", ({ path, payload }) =>
        Effect.gen(function* () {
          const found = yield* queue(path.id, () => new WorkQueueNotFound({ detail: "Work queue not found." }))
          const limit = yield* resolveLimit(payload.limit)
          const counts = yield* poll.slotCounts([found.id], { withCancelling: true })
          const holders = yield* poll.slotHolders([found.id], { withCancelling: true, offset: (payload.page - 1) * limit, limit })
          const at = yield* now
          const flowRuns = holders.map((h) => slotSummary(h, at))
          const count = counts.get(found.id) ?? 0
          return { ...paginated(flowRuns, count, limit, payload.page), flow_runs: flowRuns, active_slots: count, concurrency_limit: found.concurrency_limit }
        })
      )
      .handle("status", ({ path }) =>
        Effect.gen(function* () {
          const found = yield* queue(path.id, () => new WorkQueueNotFound({ detail: `Work queue with id ${path.id} not found` }))
          const late = yield* poll.lateRuns(found.id)
          const at = yield* now
          const recent = found.last_polled !== null && at.getTime() - found.last_polled.getTime() <= timeout * 1000
          return {
            healthy: late <= 0 && recent,
            late_runs_count: late,
            last_polled: found.last_polled,
            health_check_policy: { maximum_late_runs: 0, maximum_seconds_since_last_polled: timeout }
          }
        })
      )
  })
).pipe(Layer.provide([FlowRunsRepo.Default, PollRepo.Default, WorkPools.Default, WorkQueueLookup.Default, WorkQueuesRepo.Default]))
