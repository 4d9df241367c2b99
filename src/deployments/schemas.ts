/** Deployments on the wire: records, create/update bodies, schedules, query bodies, as the reference has them. */
import { Schema } from "effect"
import { criterion } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { BulkDeleteResponse, bulkDeleteBody, PaginationResponse, queryBodies } from "../domain/pagination.ts"
import { JsonObject, Labels, nullable, ObjectName, strictBody, Tags } from "../domain/schemas.ts"
import { StateCreate } from "../domain/states.ts"
import { Timestamp } from "../domain/time.ts"
import { GlobalConcurrencyLimit } from "../concurrency/schemas.ts"
import { CreatedBy, defaultFlowRunPolicy, FlowRunPolicy } from "../flow-runs/schemas.ts"
import { FlowRunFilter } from "../flow-runs/filter.ts"
import { FlowFilter } from "../flows/filter.ts"
import { TaskRunFilter } from "../task-runs/filter.ts"
import { WorkPoolFilter, WorkQueueFilter } from "../work-pools/filter.ts"
import { DeploymentFilter } from "./filter.ts"
import { Schedule } from "./schedules.ts"
import * as Lax from "../domain/lax.ts"

export { DeploymentFilter }

const PositiveInt = Lax.int({ gt: 0 })

export const ConcurrencyOptions = Schema.Struct({
  collision_strategy: Schema.Literal("ENQUEUE", "CANCEL_NEW").annotations({ identifier: "ConcurrencyLimitStrategy" }),
  grace_period_seconds: nullable(Lax.int({ ge: 60, le: 86_400 }))
}).annotations({ identifier: "ConcurrencyOptions" })
export type ConcurrencyOptions = typeof ConcurrencyOptions.Type

export const VersionInfo = Schema.Struct({ type: Schema.String, version: Schema.String }).annotations({
  identifier: "VersionInfo"
})

/** A schedule of a deployment as stored and answered. */
export const DeploymentSchedule = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  deployment_id: Schema.NullOr(Id),
  schedule: Schedule,
  active: Schema.Boolean,
  max_scheduled_runs: Schema.NullOr(Schema.Int),
  parameters: JsonObject,
  slug: Schema.NullOr(Schema.String)
}).annotations({ identifier: "DeploymentSchedule" })
export type DeploymentSchedule = typeof DeploymentSchedule.Type

export const DeploymentScheduleCreate = strictBody(
  {
    active: Schema.optionalWith(Lax.Bool, { default: () => true }),
    schedule: Schedule,
    max_scheduled_runs: nullable(PositiveInt),
    parameters: Schema.optionalWith(JsonObject, { default: () => ({}) }),
    slug: nullable(Schema.String),
    replaces: nullable(Schema.String)
  },
  "DeploymentScheduleCreate"
)
export type DeploymentScheduleCreate = typeof DeploymentScheduleCreate.Type

/** Every field optional: only the given ones change. */
export const DeploymentScheduleUpdate = strictBody(
  {
    active: Schema.optional(Schema.NullOr(Lax.Bool)),
    schedule: Schema.optional(Schema.NullOr(Schedule)),
    max_scheduled_runs: Schema.optional(Schema.NullOr(PositiveInt)),
    parameters: Schema.optional(JsonObject),
    slug: Schema.optional(Schema.NullOr(Schema.String)),
    replaces: Schema.optional(Schema.NullOr(Schema.String))
  },
  "DeploymentScheduleUpdate"
)
export type DeploymentScheduleUpdate = typeof DeploymentScheduleUpdate.Type

export const DeploymentStatus = Schema.Literal("READY", "NOT_READY").annotations({ identifier: "DeploymentStatus" })

/** A deployment as answered (the reference's DeploymentResponse). */
export const Deployment = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  version: Schema.NullOr(Schema.String),
  description: Schema.NullOr(Schema.String),
  flow_id: Id,
  paused: Schema.Boolean,
  schedules: Schema.Array(DeploymentSchedule),
  concurrency_limit: Schema.NullOr(Schema.Int),
  global_concurrency_limit: Schema.NullOr(GlobalConcurrencyLimit),
  concurrency_options: Schema.NullOr(ConcurrencyOptions),
  job_variables: JsonObject,
  parameters: JsonObject,
  tags: Tags,
  labels: Labels,
  work_queue_name: Schema.NullOr(Schema.String),
  work_queue_id: Schema.NullOr(Id),
  last_polled: Schema.NullOr(Timestamp),
  parameter_openapi_schema: Schema.NullOr(JsonObject),
  path: Schema.NullOr(Schema.String),
  pull_steps: Schema.NullOr(Schema.Array(JsonObject)),
  entrypoint: Schema.NullOr(Schema.String),
  storage_document_id: Schema.NullOr(Id),
  infrastructure_document_id: Schema.NullOr(Id),
  created_by: Schema.NullOr(CreatedBy),
  updated_by: Schema.NullOr(CreatedBy),
  work_pool_name: Schema.NullOr(Schema.String),
  status: Schema.NullOr(DeploymentStatus),
  enforce_parameter_schema: Schema.Boolean
}).annotations({ identifier: "DeploymentResponse" })
export type Deployment = typeof Deployment.Type

/**
 * POST /deployments/. Fields are left unset when omitted (no defaults here): creating fills the
 * defaults, while updating an existing deployment of the same flow and name changes only what was sent.
 */
export const DeploymentCreate = strictBody(
  {
    name: ObjectName,
    flow_id: Id,
    paused: Schema.optional(Lax.Bool),
    schedules: Schema.optional(Schema.Array(DeploymentScheduleCreate)),
    concurrency_limit: Schema.optional(Schema.NullOr(PositiveInt)),
    concurrency_options: Schema.optional(Schema.NullOr(ConcurrencyOptions)),
    global_concurrency_limit_id: Schema.optional(Schema.NullOr(Id)),
    enforce_parameter_schema: Schema.optional(Lax.Bool),
    parameter_openapi_schema: Schema.optional(Schema.NullOr(JsonObject)),
    parameters: Schema.optional(JsonObject),
    tags: Schema.optional(Tags),
    labels: Schema.optional(Schema.NullOr(Labels)),
    pull_steps: Schema.optional(Schema.NullOr(Schema.Array(JsonObject))),
    work_queue_name: Schema.optional(Schema.NullOr(Schema.String)),
    work_pool_name: Schema.optional(Schema.NullOr(Schema.String)),
    storage_document_id: Schema.optional(Schema.NullOr(Id)),
    infrastructure_document_id: Schema.optional(Schema.NullOr(Id)),
    description: Schema.optional(Schema.NullOr(Schema.String)),
    path: Schema.optional(Schema.NullOr(Schema.String)),
    version: Schema.optional(Schema.NullOr(Schema.String)),
    entrypoint: Schema.optional(Schema.NullOr(Schema.String)),
    job_variables: Schema.optional(JsonObject),
    version_info: Schema.optional(Schema.NullOr(VersionInfo))
  },
  "DeploymentCreate"
)
export type DeploymentCreate = typeof DeploymentCreate.Type

/** PATCH /deployments/{id}: every field optional; only the given ones change. */
export const DeploymentUpdate = strictBody(
  {
    version: Schema.optional(Schema.NullOr(Schema.String)),
    description: Schema.optional(Schema.NullOr(Schema.String)),
    paused: Schema.optional(Lax.Bool),
    schedules: Schema.optional(Schema.Array(DeploymentScheduleUpdate)),
    concurrency_limit: Schema.optional(Schema.NullOr(PositiveInt)),
    concurrency_options: Schema.optional(Schema.NullOr(ConcurrencyOptions)),
    global_concurrency_limit_id: Schema.optional(Schema.NullOr(Id)),
    parameters: Schema.optional(Schema.NullOr(JsonObject)),
    parameter_openapi_schema: Schema.optional(Schema.NullOr(JsonObject)),
    tags: Schema.optional(Tags),
    work_queue_name: Schema.optional(Schema.NullOr(Schema.String)),
    work_pool_name: Schema.optional(Schema.NullOr(Schema.String)),
    path: Schema.optional(Schema.NullOr(Schema.String)),
    job_variables: Schema.optional(Schema.NullOr(JsonObject)),
    pull_steps: Schema.optional(Schema.NullOr(Schema.Array(JsonObject))),
    entrypoint: Schema.optional(Schema.NullOr(Schema.String)),
    storage_document_id: Schema.optional(Schema.NullOr(Id)),
    infrastructure_document_id: Schema.optional(Schema.NullOr(Id)),
    enforce_parameter_schema: Schema.optional(Schema.NullOr(Lax.Bool)),
    version_info: Schema.optional(Schema.NullOr(VersionInfo))
  },
  "DeploymentUpdate"
)
export type DeploymentUpdate = typeof DeploymentUpdate.Type

/** A run created from a deployment: what the caller may set over the deployment's own values. */
export const DeploymentFlowRunCreate = strictBody(
  {
    state: nullable(StateCreate),
    name: Schema.optional(Schema.String),
    parameters: Schema.optionalWith(JsonObject, { default: () => ({}) }),
    enforce_parameter_schema: nullable(Lax.Bool),
    context: Schema.optionalWith(JsonObject, { default: () => ({}) }),
    infrastructure_document_id: nullable(Id),
    empirical_policy: Schema.optionalWith(FlowRunPolicy, { default: () => defaultFlowRunPolicy }),
    tags: Schema.optionalWith(Tags, { default: () => [] }),
    idempotency_key: nullable(Schema.String),
    labels: nullable(Labels),
    parent_task_run_id: nullable(Id),
    work_queue_name: nullable(Schema.String),
    job_variables: nullable(JsonObject)
  },
  "DeploymentFlowRunCreate"
)
export type DeploymentFlowRunCreate = typeof DeploymentFlowRunCreate.Type

export const FlowRunCreateResult = Schema.Struct({
  flow_run_id: Schema.NullOr(Id),
  status: Schema.Literal("CREATED", "FAILED"),
  error: Schema.NullOr(Schema.String)
}).annotations({ identifier: "FlowRunCreateResult" })

export const FlowRunBulkCreateResponse = Schema.Struct({ results: Schema.Array(FlowRunCreateResult) }).annotations({
  identifier: "FlowRunBulkCreateResponse"
})

export const DeploymentSort = Schema.Literal("CREATED_DESC", "UPDATED_DESC", "NAME_ASC", "NAME_DESC").annotations({
  identifier: "DeploymentSort"
})
export type DeploymentSort = typeof DeploymentSort.Type

const bodies = queryBodies(
  {
    flows: criterion(FlowFilter),
    flow_runs: criterion(FlowRunFilter),
    task_runs: criterion(TaskRunFilter),
    deployments: criterion(DeploymentFilter),
    work_pools: criterion(WorkPoolFilter),
    work_pool_queues: criterion(WorkQueueFilter)
  },
  DeploymentSort,
  "NAME_ASC"
)
export const ReadDeploymentsBody = bodies.read
export const CountDeploymentsBody = bodies.count
export const PaginateDeploymentsBody = bodies.paginate

export const DeploymentPaginationResponse = PaginationResponse(Deployment, "DeploymentPaginationResponse")

export const BulkDeleteDeploymentsBody = bulkDeleteBody("deployments", DeploymentFilter)

export const DeploymentBulkDeleteResponse = BulkDeleteResponse("DeploymentBulkDeleteResponse")

export const ScheduledFlowRunsBody = Schema.Struct({
  deployment_ids: Schema.Array(Id),
  scheduled_before: Schema.optional(Timestamp),
  limit: Schema.optional(Schema.NullOr(Lax.Int))
})

/** POST /deployments/{id}/schedule: a window to fill with runs now. */
export const ScheduleDeploymentBody = Schema.Struct({
  start_time: Schema.optional(Timestamp),
  end_time: Schema.optional(Timestamp),
  /** Seconds (the reference's time delta). */
  min_time: Schema.optional(Lax.Float),
  min_runs: Schema.optional(Lax.Int),
  max_runs: Schema.optional(Lax.Int)
})
