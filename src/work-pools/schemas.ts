/** Work pools, their queues and workers on the wire, as the reference has them. */
import { Schema } from "effect"
import { criterion } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { LimitField, OffsetField } from "../domain/pagination.ts"
import { JsonObject, nullable, ObjectName, strictBody } from "../domain/schemas.ts"
import { StateType } from "../domain/states.ts"
import { trim } from "../domain/strings.ts"
import { Timestamp } from "../domain/time.ts"
import { FlowRun } from "../flow-runs/schemas.ts"
import { WorkerFilter, WorkPoolFilter, WorkQueueFilter } from "./filter.ts"
import { MAX_WAIT_SECONDS } from "./long-poll.ts"
import * as Lax from "../domain/lax.ts"

export { WorkerFilter, WorkPoolFilter, WorkQueueFilter }

/** A name that is not blank once quotes and spaces are trimmed, as the reference checks pool names. */
const NonEmptyishName = ObjectName.pipe(
  Schema.filter((name) => trim(name, `'" `) !== "" || "name cannot be an empty string")
)

const NonNegativeInt = Lax.int({ ge: 0 })
const PositiveInt = Lax.int({ gt: 0 })

export const QueueFilter = Schema.Struct({
  tags: Schema.optionalWith(Schema.NullOr(Schema.Array(Schema.String)), { default: () => null }),
  deployment_ids: Schema.optionalWith(Schema.NullOr(Schema.Array(Id)), { default: () => null })
}).annotations({ identifier: "QueueFilter" })

export const WorkPoolStorageConfiguration = strictBody(
  {
    bundle_upload_step: nullable(JsonObject),
    bundle_execution_step: nullable(JsonObject),
    default_result_storage_block_id: nullable(Id)
  },
  "WorkPoolStorageConfiguration"
)

export const WorkPoolStatus = Schema.Literal("READY", "NOT_READY", "PAUSED").annotations({ identifier: "WorkPoolStatus" })
export const WorkQueueStatus = Schema.Literal("READY", "NOT_READY", "PAUSED").annotations({ identifier: "WorkQueueStatus" })
export const WorkerStatus = Schema.Literal("ONLINE", "OFFLINE").annotations({ identifier: "WorkerStatus" })

export const WorkPool = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  type: Schema.String,
  base_job_template: JsonObject,
  is_paused: Schema.Boolean,
  concurrency_limit: Schema.NullOr(Schema.Int),
  status: Schema.NullOr(WorkPoolStatus),
  default_queue_id: Schema.NullOr(Id),
  storage_configuration: WorkPoolStorageConfiguration,
  active_slots: Schema.NullOr(Schema.Int)
}).annotations({ identifier: "WorkPoolResponse" })
export type WorkPool = typeof WorkPool.Type

/** A job template is empty, or has both its job configuration and the variables it uses. */
const BaseJobTemplate = JsonObject.pipe(
  Schema.filter((template) => {
    if (Object.keys(template).length === 0) return true
    const configuration = template.job_configuration
    const variables = template.variables as { readonly properties?: Record<string, unknown> } | undefined
    const filled = (v: unknown) => v != null && (typeof v !== "object" || Object.keys(v).length > 0)
    if (!filled(configuration) || !filled(variables)) {
      return "The `base_job_template` must contain both a `job_configuration` key and a `variables` key."
    }
    const declared = new Set(Object.keys(variables?.properties ?? {}))
    const used = new Set<string>()
    for (const value of Object.values(configuration as Record<string, unknown>)) {
      for (const match of JSON.stringify(value).matchAll(/{{\s*([\w.\-[\]$]+)\s*}}/g)) used.add(match[1]!)
    }
    const missing = [...used].filter((name) => !declared.has(name))
    return missing.length === 0 ||
      `The variables specified in the job configuration template must be present as properties in the variables schema. Your job configuration uses the following undeclared variable(s): ${missing.join(" ,")}.`
  })
)

export const WorkPoolCreate = strictBody(
  {
    name: NonEmptyishName,
    description: nullable(Schema.String),
    type: Schema.optionalWith(Schema.String, { default: () => "prefect-agent" }),
    base_job_template: Schema.optionalWith(BaseJobTemplate, { default: () => ({}) }),
    is_paused: Schema.optionalWith(Lax.Bool, { default: () => false }),
    concurrency_limit: nullable(NonNegativeInt),
    storage_configuration: Schema.optional(WorkPoolStorageConfiguration)
  },
  "WorkPoolCreate"
)
export type WorkPoolCreate = typeof WorkPoolCreate.Type

/** Every field optional; only the given ones change. */
export const WorkPoolUpdate = strictBody(
  {
    description: Schema.optional(Schema.NullOr(Schema.String)),
    is_paused: Schema.optional(Schema.NullOr(Lax.Bool)),
    base_job_template: Schema.optional(Schema.NullOr(BaseJobTemplate)),
    concurrency_limit: Schema.optional(Schema.NullOr(NonNegativeInt)),
    storage_configuration: Schema.optional(Schema.NullOr(WorkPoolStorageConfiguration))
  },
  "WorkPoolUpdate"
)
export type WorkPoolUpdate = typeof WorkPoolUpdate.Type

/** A work queue as answered (the spec's "Work queue (response item)", plus active_slots). */
export const WorkQueue = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  is_paused: Schema.Boolean,
  concurrency_limit: Schema.NullOr(Schema.Int),
  priority: Schema.Int,
  work_pool_id: Schema.NullOr(Id),
  filter: Schema.NullOr(QueueFilter),
  last_polled: Schema.NullOr(Timestamp),
  work_pool_name: Schema.NullOr(Schema.String),
  status: Schema.NullOr(WorkQueueStatus),
  active_slots: Schema.NullOr(Schema.Int)
}).annotations({ identifier: "WorkQueueResponse" })
export type WorkQueue = typeof WorkQueue.Type

/** The reference's core queue record (the legacy work_queue_check answers it). */
export const CoreWorkQueue = WorkQueue.pipe(Schema.omit("work_pool_name", "status", "active_slots")).annotations({
  identifier: "WorkQueue"
})

export const WorkQueueCreate = strictBody(
  {
    name: ObjectName,
    description: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => "" }),
    is_paused: Schema.optionalWith(Lax.Bool, { default: () => false }),
    concurrency_limit: nullable(NonNegativeInt),
    priority: nullable(PositiveInt),
    filter: nullable(QueueFilter)
  },
  "WorkQueueCreate"
)
export type WorkQueueCreate = typeof WorkQueueCreate.Type

/** Every field optional; only the given ones change. */
export const WorkQueueUpdate = strictBody(
  {
    name: Schema.optional(Schema.NullOr(ObjectName)),
    description: Schema.optional(Schema.NullOr(Schema.String)),
    is_paused: Schema.optional(Lax.Bool),
    concurrency_limit: Schema.optional(Schema.NullOr(NonNegativeInt)),
    priority: Schema.optional(Schema.NullOr(PositiveInt)),
    last_polled: Schema.optional(Schema.NullOr(Timestamp)),
    filter: Schema.optional(Schema.NullOr(QueueFilter))
  },
  "WorkQueueUpdate"
)
export type WorkQueueUpdate = typeof WorkQueueUpdate.Type

export const Worker = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  work_pool_id: Id,
  last_heartbeat_time: Schema.NullOr(Timestamp),
  heartbeat_interval_seconds: Schema.NullOr(Schema.Int),
  status: WorkerStatus
}).annotations({ identifier: "WorkerResponse" })

/** A flow run as the worker poll answers it: the reference's core record, without the pool fields. */
export const WorkerFlowRun = Schema.Struct({
  work_pool_id: Id,
  work_queue_id: Id,
  flow_run: FlowRun.pipe(Schema.omit("work_pool_id", "work_pool_name")).annotations({ identifier: "FlowRun" })
}).annotations({ identifier: "WorkerFlowRunResponse" })

export const WorkQueueStatusDetail = Schema.Struct({
  healthy: Schema.Boolean,
  late_runs_count: Schema.Int,
  last_polled: Schema.NullOr(Timestamp),
  health_check_policy: Schema.Struct({
    maximum_late_runs: Schema.NullOr(Schema.Int),
    maximum_seconds_since_last_polled: Schema.NullOr(Schema.Int)
  }).annotations({ identifier: "WorkQueueHealthPolicy" })
}).annotations({ identifier: "WorkQueueStatusDetail" })

export const FlowRunSlotSummary = Schema.Struct({
  id: Id,
  name: Schema.String,
  state_type: Schema.NullOr(StateType),
  state_name: Schema.NullOr(Schema.String),
  start_time: Schema.NullOr(Timestamp),
  state_timestamp: Schema.NullOr(Timestamp),
  time_in_current_state: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "FlowRunSlotSummary" })

export const WorkQueueConcurrencyStatusDetail = Schema.Struct({
  queue_id: Id,
  queue_name: Schema.String,
  active_slots: Schema.Int,
  concurrency_limit: Schema.NullOr(Schema.Int),
  flow_runs: Schema.Array(FlowRunSlotSummary),
  flow_run_count: Schema.NullOr(Schema.Int)
}).annotations({ identifier: "WorkQueueConcurrencyStatusDetail" })

const pageFields = { active_slots: Schema.Int, count: Schema.Int, limit: Schema.Int, pages: Schema.Int, page: Schema.Int }

export const WorkPoolConcurrencyStatus = Schema.Struct({
  ...pageFields,
  concurrency_limit: Schema.NullOr(Schema.Int),
  queues: Schema.Array(WorkQueueConcurrencyStatusDetail)
}).annotations({ identifier: "WorkPoolConcurrencyStatus" })

export const WorkQueueConcurrencyStatus = Schema.Struct({
  ...pageFields,
  concurrency_limit: Schema.NullOr(Schema.Int),
  flow_runs: Schema.Array(FlowRunSlotSummary)
}).annotations({ identifier: "WorkQueueConcurrencyStatus" })

export const ReadWorkPoolsBody = Schema.Struct({
  work_pools: criterion(WorkPoolFilter),
  offset: OffsetField,
  limit: LimitField
})

export const CountWorkPoolsBody = Schema.Struct({ work_pools: criterion(WorkPoolFilter) })

/** The spec's two queue filter bodies (in a pool, and across pools). */
export const ReadWorkQueuesBody = Schema.Struct({
  work_queues: criterion(WorkQueueFilter),
  offset: OffsetField,
  limit: LimitField
})

export const ReadWorkersBody = Schema.Struct({
  workers: criterion(WorkerFilter),
  offset: OffsetField,
  limit: LimitField
})

export const HeartbeatBody = Schema.Struct({
  name: Schema.String,
  heartbeat_interval_seconds: Schema.optional(Schema.NullOr(Lax.Int))
})

export const PoolScheduledRunsBody = Schema.Struct({
  work_queue_names: Schema.optional(Schema.NullOr(Schema.Array(Schema.String))),
  scheduled_before: Schema.optional(Schema.NullOr(Timestamp)),
  scheduled_after: Schema.optional(Schema.NullOr(Timestamp)),
  limit: LimitField,
  /** Baton's extension: seconds to hold a poll that finds nothing until a run becomes due (0: answer at once). */
  wait_seconds: Schema.optionalWith(
    Lax.float({ ge: 0, le: MAX_WAIT_SECONDS }),
    { default: () => 0 }
  )
})

export const QueueRunsBody = Schema.Struct({
  scheduled_before: Schema.optional(Schema.NullOr(Timestamp)),
  limit: LimitField
})

export const PoolConcurrencyStatusBody = Schema.Struct({
  page: Schema.optionalWith(Lax.int({ ge: 1 }), { default: () => 1 }),
  limit: LimitField,
  flow_run_limit: Schema.optionalWith(Lax.int({ ge: 0, le: 200 }), { default: () => 10 })
})

export const QueueConcurrencyStatusBody = Schema.Struct({
  page: Schema.optionalWith(Lax.int({ ge: 1 }), { default: () => 1 }),
  limit: LimitField
})

export const TaskWorker = Schema.Struct({
  identifier: Schema.String,
  task_keys: Schema.Array(Schema.String),
  timestamp: Timestamp
}).annotations({ identifier: "TaskWorkerResponse" })

export const TaskWorkersBody = Schema.Struct({
  task_worker_filter: Schema.optional(Schema.NullOr(Schema.Struct({ task_keys: Schema.Array(Schema.String) })))
})
