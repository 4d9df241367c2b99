/** Task runs on the wire: records, create/update bodies, filter and sort, as the reference has them. */
import { Schema } from "effect"
import { criterion } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import * as Lax from "../domain/lax.ts"
import { PaginationResponse, queryBodies } from "../domain/pagination.ts"
import { JsonObject, Labels, nullable, Tags } from "../domain/schemas.ts"
import { State, StateCreate, StateType } from "../domain/states.ts"
import { Timestamp } from "../domain/time.ts"
import { FlowRunFilter, HistoryBody } from "../flow-runs/schemas.ts"
import { FlowFilter } from "../flows/schemas.ts"
import { DeploymentFilter } from "../deployments/filter.ts"
import { TaskRunFilter } from "./filter.ts"

/** At most 50 delays, as the reference's validator allows. */
const RetryDelay = Schema.NullOr(Schema.Union(Lax.Float, Schema.Array(Lax.Float))).pipe(
  Schema.filter((delay) => !Array.isArray(delay) || delay.length <= 50 || "Can not configure more than 50 retry delays per task.")
)

export const TaskRunPolicy = Schema.Struct({
  max_retries: Schema.optionalWith(Lax.Int, { default: () => 0 }),
  retry_delay_seconds: Schema.optionalWith(Lax.Float, { default: () => 0 }),
  retries: Schema.optionalWith(Schema.NullOr(Lax.Int), { default: () => null }),
  retry_delay: Schema.optionalWith(RetryDelay, { default: () => null }),
  retry_jitter_factor: Schema.optionalWith(
    Schema.NullOr(Lax.Float).pipe(Schema.filter((factor) => factor === null || factor >= 0 || "`retry_jitter_factor` must be >= 0.")),
    { default: () => null }
  )
}).annotations({ identifier: "TaskRunPolicy" })
export type TaskRunPolicy = typeof TaskRunPolicy.Type

export const TaskRun = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  flow_run_id: Schema.NullOr(Id),
  task_key: Schema.String,
  dynamic_key: Schema.String,
  cache_key: Schema.NullOr(Schema.String),
  cache_expiration: Schema.NullOr(Timestamp),
  task_version: Schema.NullOr(Schema.String),
  empirical_policy: TaskRunPolicy,
  tags: Tags,
  labels: Schema.NullOr(Labels),
  state_id: Schema.NullOr(Id),
  task_inputs: JsonObject,
  state_type: Schema.NullOr(StateType),
  state_name: Schema.NullOr(Schema.String),
  run_count: Schema.Int,
  flow_run_run_count: Schema.Int,
  expected_start_time: Schema.NullOr(Timestamp),
  next_scheduled_start_time: Schema.NullOr(Timestamp),
  start_time: Schema.NullOr(Timestamp),
  end_time: Schema.NullOr(Timestamp),
  total_run_time: Schema.Number,
  estimated_run_time: Schema.Number,
  estimated_start_time_delta: Schema.Number,
  state: Schema.NullOr(State)
}).annotations({ identifier: "TaskRun" })
export type TaskRun = typeof TaskRun.Type

export const TaskRunCreate = Schema.Struct({
  id: nullable(Id),
  state: nullable(StateCreate),
  name: Schema.optional(Schema.String),
  flow_run_id: nullable(Id),
  task_key: Schema.String,
  dynamic_key: Schema.String,
  cache_key: nullable(Schema.String),
  cache_expiration: nullable(Timestamp),
  task_version: nullable(Schema.String),
  empirical_policy: Schema.optionalWith(TaskRunPolicy, { default: () => Schema.decodeSync(TaskRunPolicy)({}) }),
  tags: Schema.optionalWith(Tags, { default: () => [] }),
  labels: nullable(Labels),
  task_inputs: Schema.optionalWith(JsonObject, { default: () => ({}) })
}).annotations({ identifier: "TaskRunCreate", parseOptions: { onExcessProperty: "error" } })
export type TaskRunCreate = typeof TaskRunCreate.Type

export const TaskRunUpdate = Schema.Struct({ name: Schema.optional(Schema.String) }).annotations({
  identifier: "TaskRunUpdate",
  parseOptions: { onExcessProperty: "error" }
})

export { TaskRunFilter }

export const TaskRunSort = Schema.Literal(
  "ID_DESC",
  "EXPECTED_START_TIME_ASC",
  "EXPECTED_START_TIME_DESC",
  "NAME_ASC",
  "NAME_DESC",
  "NEXT_SCHEDULED_START_TIME_ASC",
  "END_TIME_DESC"
).annotations({ identifier: "TaskRunSort" })
export type TaskRunSort = typeof TaskRunSort.Type

const filterFields = {
  flows: criterion(FlowFilter),
  flow_runs: criterion(FlowRunFilter),
  task_runs: criterion(TaskRunFilter),
  deployments: criterion(DeploymentFilter)
}

const bodies = queryBodies(filterFields, TaskRunSort, "ID_DESC")
export const ReadTaskRunsBody = bodies.read
export const CountTaskRunsBody = bodies.count
export const PaginateTaskRunsBody = bodies.paginate

export const TaskRunHistoryBody = Schema.Struct({ ...HistoryBody, ...filterFields })

export const TaskRunPaginationResponse = PaginationResponse(TaskRun, "TaskRunPaginationResponse")
