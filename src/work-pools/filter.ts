/**
 * WorkPoolFilter and WorkQueueFilter: wire schemas and conditions on the `work_pool` and `work_queue`
 * tables. Deployment and run queries accept them, so they live apart from the area's other schemas.
 */
import { Schema } from "effect"
import { criterion, Field, type FilterSpec, operatorField, strictStruct } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { Timestamp } from "../domain/time.ts"

const strings = criterion(Schema.Array(Schema.String))

export const WorkPoolFilter = strictStruct(
  {
    operator: operatorField,
    id: criterion(strictStruct({ any_: criterion(Schema.Array(Id)) }, "WorkPoolFilterId")),
    name: criterion(strictStruct({ any_: strings }, "WorkPoolFilterName")),
    type: criterion(strictStruct({ any_: strings }, "WorkPoolFilterType"))
  },
  "WorkPoolFilter"
)
export type WorkPoolFilter = typeof WorkPoolFilter.Type

export const WorkQueueFilter = strictStruct(
  {
    operator: operatorField,
    id: criterion(strictStruct({ any_: criterion(Schema.Array(Id)) }, "WorkQueueFilterId")),
    name: criterion(strictStruct({ any_: strings, startswith_: strings }, "WorkQueueFilterName"))
  },
  "WorkQueueFilter"
)
export type WorkQueueFilter = typeof WorkQueueFilter.Type

const at = criterion(Timestamp)

export const WorkerFilter = strictStruct(
  {
    operator: operatorField,
    last_heartbeat_time: criterion(strictStruct({ before_: at, after_: at }, "WorkerFilterLastHeartbeatTime")),
    status: criterion(
      strictStruct(
        { any_: criterion(Schema.Array(Schema.Literal("ONLINE", "OFFLINE"))), not_any_: criterion(Schema.Array(Schema.Literal("ONLINE", "OFFLINE"))) },
        "WorkerFilterStatus"
      )
    )
  },
  "WorkerFilter"
)
export type WorkerFilter = typeof WorkerFilter.Type

export const workerFilterSpec: FilterSpec = {
  last_heartbeat_time: Field.time("worker.last_heartbeat_time"),
  status: Field.oneOf("worker.status", "text")
}

export const workPoolFilterSpec: FilterSpec = {
  id: Field.oneOf("work_pool.id", "uuid"),
  name: Field.oneOf("work_pool.name", "text"),
  type: Field.oneOf("work_pool.type", "text")
}

export const workQueueFilterSpec: FilterSpec = {
  id: Field.oneOf("work_queue.id", "uuid"),
  name: Field.text("work_queue.name")
}
