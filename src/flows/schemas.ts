/** Flows on the wire: records, create/update bodies, filter and sort, as the reference has them. */
import { Schema } from "effect"
import { criterion } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { BulkDeleteResponse, bulkDeleteBody, PaginationResponse, queryBodies } from "../domain/pagination.ts"
import { Labels, ObjectName, strictBody, Tags } from "../domain/schemas.ts"
import { Timestamp } from "../domain/time.ts"
import { DeploymentFilter } from "../deployments/filter.ts"
import { FlowRunFilter } from "../flow-runs/filter.ts"
import { TaskRunFilter } from "../task-runs/filter.ts"
import { WorkPoolFilter } from "../work-pools/filter.ts"
import { FlowFilter } from "./filter.ts"

export const Flow = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  tags: Tags,
  labels: Schema.NullOr(Labels)
}).annotations({ identifier: "Flow" })
export type Flow = typeof Flow.Type

export const FlowCreate = strictBody(
  {
    name: ObjectName,
    tags: Schema.optionalWith(Tags, { default: () => [] }),
    labels: Schema.optionalWith(Schema.NullOr(Labels), { default: () => ({}) })
  },
  "FlowCreate"
)

export const FlowUpdate = strictBody({ tags: Schema.optional(Tags) }, "FlowUpdate")

export { FlowFilter }

export const FlowSort = Schema.Literal("CREATED_DESC", "UPDATED_DESC", "NAME_ASC", "NAME_DESC").annotations({
  identifier: "FlowSort"
})
export type FlowSort = typeof FlowSort.Type

const bodies = queryBodies(
  {
    flows: criterion(FlowFilter),
    flow_runs: criterion(FlowRunFilter),
    task_runs: criterion(TaskRunFilter),
    deployments: criterion(DeploymentFilter),
    work_pools: criterion(WorkPoolFilter)
  },
  FlowSort,
  "NAME_ASC"
)
export const ReadFlowsBody = bodies.read
export const CountFlowsBody = bodies.count
export const PaginateFlowsBody = bodies.paginate

export const FlowPaginationResponse = PaginationResponse(Flow, "FlowPaginationResponse")

export const BulkDeleteFlowsBody = bulkDeleteBody("flows", FlowFilter)

export const FlowBulkDeleteResponse = BulkDeleteResponse("FlowBulkDeleteResponse")
