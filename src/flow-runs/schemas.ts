/** Flow runs on the wire: records, create/update bodies, filter and sort, as the reference has them. */
import { Schema } from "effect"
import { criterion } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import * as Lax from "../domain/lax.ts"
import { BulkDeleteResponse, bulkDeleteBody, PaginationResponse, queryBodies } from "../domain/pagination.ts"
import { JsonObject, Labels, nullable, Tags } from "../domain/schemas.ts"
import { State, StateCreate, StateType } from "../domain/states.ts"
import { Timestamp } from "../domain/time.ts"
import { FlowFilter } from "../flows/schemas.ts"
import { DeploymentFilter } from "../deployments/filter.ts"
import { TaskRunFilter } from "../task-runs/filter.ts"
import { WorkPoolFilter, WorkQueueFilter } from "../work-pools/filter.ts"
import { FlowRunFilter } from "./filter.ts"

export const FlowRunPolicy = Schema.Struct({
  max_retries: Schema.optionalWith(Lax.Int, { default: () => 0 }),
  retry_delay_seconds: Schema.optionalWith(Lax.Float, { default: () => 0 }),
  retries: Schema.optionalWith(Schema.NullOr(Lax.Int), { default: () => null }),
  retry_delay: Schema.optionalWith(Schema.NullOr(Lax.Int), { default: () => null }),
  pause_keys: Schema.optionalWith(Schema.NullOr(Schema.Array(Schema.String)), { default: () => [] }),
  resuming: Schema.optionalWith(Schema.NullOr(Lax.Bool), { default: () => false }),
  retry_type: Schema.optionalWith(Schema.NullOr(Schema.Literal("in_process", "reschedule")), { default: () => null })
}).annotations({ identifier: "FlowRunPolicy" })
export type FlowRunPolicy = typeof FlowRunPolicy.Type

export const defaultFlowRunPolicy: FlowRunPolicy = Schema.decodeSync(FlowRunPolicy)({})

export const CreatedBy = Schema.Struct({
  id: Schema.optionalWith(Schema.NullOr(Id), { default: () => null }),
  type: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  display_value: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
}).annotations({ identifier: "CreatedBy" })

/** A flow run as answered (the reference's FlowRunResponse). */
export const FlowRun = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  flow_id: Id,
  state_id: Schema.NullOr(Id),
  deployment_id: Schema.NullOr(Id),
  deployment_version: Schema.NullOr(Schema.String),
  work_queue_id: Schema.NullOr(Id),
  work_queue_name: Schema.NullOr(Schema.String),
  flow_version: Schema.NullOr(Schema.String),
  parameters: JsonObject,
  idempotency_key: Schema.NullOr(Schema.String),
  context: JsonObject,
  empirical_policy: FlowRunPolicy,
  tags: Tags,
  labels: Schema.NullOr(Labels),
  parent_task_run_id: Schema.NullOr(Id),
  state_type: Schema.NullOr(StateType),
  state_name: Schema.NullOr(Schema.String),
  run_count: Schema.Int,
  expected_start_time: Schema.NullOr(Timestamp),
  next_scheduled_start_time: Schema.NullOr(Timestamp),
  start_time: Schema.NullOr(Timestamp),
  end_time: Schema.NullOr(Timestamp),
  total_run_time: Schema.Number,
  estimated_run_time: Schema.Number,
  estimated_start_time_delta: Schema.Number,
  auto_scheduled: Schema.Boolean,
  infrastructure_document_id: Schema.NullOr(Id),
  infrastructure_pid: Schema.NullOr(Schema.String),
  created_by: Schema.NullOr(CreatedBy),
  work_pool_id: Schema.NullOr(Id),
  work_pool_name: Schema.NullOr(Schema.String),
  state: Schema.NullOr(State),
  job_variables: Schema.NullOr(JsonObject)
}).annotations({ identifier: "FlowRunResponse" })
export type FlowRun = typeof FlowRun.Type

export const FlowRunCreate = Schema.Struct({
  state: nullable(StateCreate),
  name: Schema.optional(Schema.String),
  flow_id: Id,
  flow_version: nullable(Schema.String),
  parameters: Schema.optionalWith(JsonObject, { default: () => ({}) }),
  context: Schema.optionalWith(JsonObject, { default: () => ({}) }),
  parent_task_run_id: nullable(Id),
  infrastructure_document_id: nullable(Id),
  empirical_policy: Schema.optionalWith(FlowRunPolicy, { default: () => defaultFlowRunPolicy }),
  tags: Schema.optionalWith(Tags, { default: () => [] }),
  labels: nullable(Labels),
  idempotency_key: nullable(Schema.String),
  work_pool_name: nullable(Schema.String),
  work_queue_name: nullable(Schema.String),
  job_variables: nullable(JsonObject),
  deployment_id: nullable(Id)
}).annotations({ identifier: "FlowRunCreate", parseOptions: { onExcessProperty: "error" } })
export type FlowRunCreate = typeof FlowRunCreate.Type

/** PATCH /flow_runs/{id}: every field optional; only the given ones change. */
export const FlowRunUpdate = Schema.Struct({
  name: Schema.optional(Schema.NullOr(Schema.String)),
  flow_version: Schema.optional(Schema.NullOr(Schema.String)),
  parameters: Schema.optional(JsonObject),
  empirical_policy: Schema.optional(FlowRunPolicy),
  tags: Schema.optional(Tags),
  infrastructure_pid: Schema.optional(Schema.NullOr(Schema.String)),
  job_variables: Schema.optional(Schema.NullOr(JsonObject))
}).annotations({ identifier: "FlowRunUpdate", parseOptions: { onExcessProperty: "error" } })
export type FlowRunUpdate = typeof FlowRunUpdate.Type

export { FlowRunFilter }

export const FlowRunSort = Schema.Literal(
  "ID_DESC",
  "START_TIME_ASC",
  "START_TIME_DESC",
  "EXPECTED_START_TIME_ASC",
  "EXPECTED_START_TIME_DESC",
  "NAME_ASC",
  "NAME_DESC",
  "NEXT_SCHEDULED_START_TIME_ASC",
  "END_TIME_DESC"
).annotations({ identifier: "FlowRunSort" })
export type FlowRunSort = typeof FlowRunSort.Type

/** The filters a flow run query combines: its own and those of related objects. */
const filterFields = {
  flows: criterion(FlowFilter),
  flow_runs: criterion(FlowRunFilter),
  task_runs: criterion(TaskRunFilter),
  deployments: criterion(DeploymentFilter),
  work_pools: criterion(WorkPoolFilter),
  work_pool_queues: criterion(WorkQueueFilter)
}

const bodies = queryBodies(filterFields, FlowRunSort, "ID_DESC")
export const ReadFlowRunsBody = bodies.read
export const CountFlowRunsBody = bodies.count
export const PaginateFlowRunsBody = bodies.paginate

export const FlowRunPaginationResponse = PaginationResponse(FlowRun, "FlowRunPaginationResponse")

export const BulkDeleteFlowRunsBody = bulkDeleteBody("flow_runs", FlowRunFilter)

export const FlowRunBulkDeleteResponse = BulkDeleteResponse("FlowRunBulkDeleteResponse")

export const SetFlowRunStateBody = Schema.Struct({
  state: StateCreate,
  force: Schema.optionalWith(Lax.Bool, { default: () => false })
})

const SetStateStatus = Schema.Literal("ACCEPT", "REJECT", "ABORT", "WAIT")

const StateResponseDetails = Schema.Union(
  Schema.Struct({ type: Schema.Literal("accept_details") }),
  Schema.Struct({ type: Schema.Literal("reject_details"), reason: Schema.NullOr(Schema.String) }),
  Schema.Struct({ type: Schema.Literal("abort_details"), reason: Schema.NullOr(Schema.String) }),
  Schema.Struct({ type: Schema.Literal("wait_details"), delay_seconds: Schema.Int, reason: Schema.NullOr(Schema.String) })
)

/** The engine's answer: its decision, why, and the run's state afterwards. */
export const OrchestrationResult = Schema.Struct({
  state: Schema.NullOr(State),
  status: SetStateStatus,
  details: StateResponseDetails
}).annotations({ identifier: "OrchestrationResult" })

export const HistoryBody = {
  history_start: Timestamp,
  history_end: Timestamp,
  history_interval_seconds: Lax.Float
}

// History names its queue filter `work_queues`, as the reference does.
const { work_pool_queues: _, ...historyFilters } = filterFields
export const FlowRunHistoryBody = Schema.Struct({ ...HistoryBody, ...historyFilters, work_queues: criterion(WorkQueueFilter) })

export const HistoryResponse = Schema.Struct({
  interval_start: Timestamp,
  interval_end: Timestamp,
  states: Schema.Array(
    Schema.Struct({
      state_type: StateType,
      state_name: Schema.String,
      count_runs: Schema.Int,
      sum_estimated_run_time: Schema.Number,
      sum_estimated_lateness: Schema.Number
    })
  )
}).annotations({ identifier: "HistoryResponse" })

export const LatenessBody = Schema.Struct(filterFields)

/**
 * PATCH /flow_runs/{id}/labels. The reference takes any JSON values here, but a run whose labels
 * are not key/value labels (a list, an object) could not be answered any more: refused with 422.
 */
export const FlowRunLabelsBody = Labels

export const FlowRunInput = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  flow_run_id: Id,
  key: Schema.String,
  value: Schema.String,
  sender: Schema.NullOr(Schema.String)
}).annotations({ identifier: "FlowRunInput" })

export const CreateFlowRunInputBody = Schema.Struct({
  key: Schema.String.pipe(Schema.pattern(/^[a-z0-9-]*$/, { jsonSchema: { pattern: "^[a-z0-9-]*$" } })),
  value: Schema.String,
  sender: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
})

export const FilterFlowRunInputBody = Schema.Struct({
  prefix: Schema.String,
  limit: Schema.optionalWith(Lax.Int, { default: () => 1 }),
  exclude_keys: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] })
})

export const BulkSetFlowRunStateBody = Schema.Struct({
  flow_runs: criterion(FlowRunFilter),
  state: StateCreate,
  force: Schema.optionalWith(Lax.Bool, { default: () => false }),
  limit: Schema.optionalWith(Lax.int({ ge: 1, le: 50 }), { default: () => 50 })
})

export const FlowRunBulkSetStateResponse = Schema.Struct({
  results: Schema.Array(
    Schema.Struct({
      flow_run_id: Id,
      status: SetStateStatus,
      state: Schema.NullOr(State),
      details: StateResponseDetails
    })
  )
}).annotations({ identifier: "FlowRunBulkSetStateResponse" })

export const ResumeFlowRunBody = Schema.Struct({
  run_input: Schema.optionalWith(Schema.NullOr(JsonObject), { default: () => null })
})
