/**
 * WorkPoolFilter, WorkQueueFilter and WorkerFilter: their criteria, each its wire schema and its
 * condition on the `work_pool`, `work_queue` and `worker` tables. Deployment and run queries accept
 * the first two, so they live apart from the area's other schemas.
 */
import { Schema } from "effect"
import { Criterion, Filter } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"

export const WorkPoolFilter = Filter.make("WorkPoolFilter", {
  id: Criterion.oneOf("WorkPoolFilterId", "work_pool.id", "uuid", Id, ["any_"]),
  name: Criterion.oneOf("WorkPoolFilterName", "work_pool.name", "text", Schema.String, ["any_"]),
  type: Criterion.oneOf("WorkPoolFilterType", "work_pool.type", "text", Schema.String, ["any_"])
})
export type WorkPoolFilter = typeof WorkPoolFilter.Type

export const WorkQueueFilter = Filter.make("WorkQueueFilter", {
  id: Criterion.oneOf("WorkQueueFilterId", "work_queue.id", "uuid", Id, ["any_"]),
  name: Criterion.text("WorkQueueFilterName", "work_queue.name", ["any_", "startswith_"])
})
export type WorkQueueFilter = typeof WorkQueueFilter.Type

const WorkerStatus = Schema.Literal("ONLINE", "OFFLINE")

export const WorkerFilter = Filter.make("WorkerFilter", {
  last_heartbeat_time: Criterion.time("WorkerFilterLastHeartbeatTime", "worker.last_heartbeat_time", ["before_", "after_"]),
  status: Criterion.oneOf("WorkerFilterStatus", "worker.status", "text", WorkerStatus, ["any_", "not_any_"])
})
export type WorkerFilter = typeof WorkerFilter.Type
