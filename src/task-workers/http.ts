import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { BatonApi } from "../api.ts"
import { TaskRunDeliveries } from "./deliveries.ts"

/** The task workers connected to the task-run websocket of any process, optionally those serving given task keys. */
export const TaskWorkersLive = apiGroup(BatonApi, "taskWorkers", (handlers) =>
  Effect.gen(function* () {
    const deliveries = yield* TaskRunDeliveries
    return handlers.handle("filter", ({ payload }) => {
      const keys = payload.task_worker_filter?.task_keys ?? []
      return Effect.map(deliveries.workers(keys.length > 0 ? keys : null), (workers) =>
        workers.map((worker) => ({ identifier: worker.identifier, task_keys: worker.task_keys, timestamp: worker.timestamp })))
    })
  })
).pipe(Layer.provide(TaskRunDeliveries.Default))
