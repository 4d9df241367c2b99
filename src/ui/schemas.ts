/**
 * The bodies and answers of the endpoints the reference UI calls (`/ui/...`), as the reference has
 * them: per-id counts and next runs of flows, a light list of flow runs for charts, task run counts
 * for the dashboard, a task run with its flow run's name, and checking values against a JSON Schema.
 */
import { Schema } from "effect"
import { DeploymentFilter } from "../deployments/filter.ts"
import { criterion } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import * as Lax from "../domain/lax.ts"
import { OffsetField } from "../domain/pagination.ts"
import { JsonObject } from "../domain/schemas.ts"
import { StateType } from "../domain/states.ts"
import { Timestamp } from "../domain/time.ts"
import { FlowRunFilter } from "../flow-runs/filter.ts"
import { FlowRunSort } from "../flow-runs/schemas.ts"
import { FlowFilter } from "../flows/schemas.ts"
import { TaskRunFilter } from "../task-runs/filter.ts"
import { TaskRun } from "../task-runs/schemas.ts"
import { WorkPoolFilter, WorkQueueFilter } from "../work-pools/filter.ts"

// The reference documents at most 200 ids but does not enforce it (FastAPI passes `max_items` on
// to the OpenAPI document only); neither does Baton.
export const FlowIdsBody = Schema.Struct({ flow_ids: Schema.Array(Id) })
export const FlowRunIdsBody = Schema.Struct({ flow_run_ids: Schema.Array(Id) })

/** A count per id asked for, in the order asked, 0 for ids with nothing to count. */
export const CountsById = Schema.Record({ key: Schema.String, value: Schema.Int })

export const SimpleNextFlowRun = Schema.Struct({
  id: Id,
  flow_id: Id,
  name: Schema.String,
  state_name: Schema.String,
  state_type: StateType,
  next_scheduled_start_time: Timestamp
}).annotations({ identifier: "SimpleNextFlowRun" })
export type SimpleNextFlowRun = typeof SimpleNextFlowRun.Type

/** A flow's soonest Scheduled run per flow id asked for, null for flows with none. */
export const NextRunsByFlow = Schema.Record({ key: Schema.String, value: Schema.NullOr(SimpleNextFlowRun) })

export const SimpleFlowRun = Schema.Struct({
  id: Id,
  state_type: StateType,
  /** The start time of the run, or the expected start time if it has not run yet. */
  timestamp: Timestamp,
  /** Its estimated run time, in seconds. */
  duration: Schema.Number,
  /** The delay between its expected and actual start time, in seconds. */
  lateness: Schema.Number
}).annotations({ identifier: "SimpleFlowRun" })
export type SimpleFlowRun = typeof SimpleFlowRun.Type

/** The most runs one history request answers, and its default. */
export const HISTORY_LIMIT = 1000

export const UiFlowRunHistoryBody = Schema.Struct({
  sort: Schema.optionalWith(FlowRunSort, { default: () => "EXPECTED_START_TIME_DESC" as const }),
  // The reference bounds it above only (a negative limit fails in its database): Baton says 422.
  limit: Schema.optionalWith(Lax.int({ ge: 0, le: HISTORY_LIMIT }), { default: () => HISTORY_LIMIT }),
  offset: OffsetField,
  flows: criterion(FlowFilter),
  flow_runs: criterion(FlowRunFilter),
  task_runs: criterion(TaskRunFilter),
  deployments: criterion(DeploymentFilter),
  work_pools: criterion(WorkPoolFilter)
})
export type UiFlowRunHistoryBody = typeof UiFlowRunHistoryBody.Type

/** A task run with its flow run's name (null without a flow run). */
export const UITaskRun = Schema.Struct({
  ...TaskRun.fields,
  flow_run_name: Schema.NullOr(Schema.String)
}).annotations({ identifier: "UITaskRun" })

export const DashboardTaskRunCountsBody = Schema.Struct({
  task_runs: TaskRunFilter,
  flows: criterion(FlowFilter),
  flow_runs: criterion(FlowRunFilter),
  deployments: criterion(DeploymentFilter),
  work_pools: criterion(WorkPoolFilter),
  work_queues: criterion(WorkQueueFilter)
})
export type DashboardTaskRunCountsBody = typeof DashboardTaskRunCountsBody.Type

export const TaskRunCount = Schema.Struct({ completed: Schema.Int, failed: Schema.Int }).annotations({
  identifier: "TaskRunCount"
})

export const TaskRunCountsByStateBody = Schema.Struct({
  flows: criterion(FlowFilter),
  flow_runs: criterion(FlowRunFilter),
  task_runs: criterion(TaskRunFilter),
  deployments: criterion(DeploymentFilter)
})

/** How many runs are in each state type, every type present (the reference's field order). */
export const CountByState = Schema.Struct({
  COMPLETED: Schema.Int,
  PENDING: Schema.Int,
  RUNNING: Schema.Int,
  FAILED: Schema.Int,
  CANCELLED: Schema.Int,
  CRASHED: Schema.Int,
  PAUSED: Schema.Int,
  CANCELLING: Schema.Int,
  SCHEDULED: Schema.Int
}).annotations({ identifier: "CountByState" })
export type CountByState = typeof CountByState.Type

export const ValidateSchemaValuesBody = Schema.Struct({ schema: JsonObject, values: JsonObject })

/** The problems of one property, or one item of a list: messages, and those of what it holds. */
export interface SchemaValuePropertyError {
  readonly property: string
  readonly errors: ReadonlyArray<SchemaValueError>
}
export interface SchemaValueIndexError {
  readonly index: number
  readonly errors: ReadonlyArray<SchemaValueError>
}
export type SchemaValueError = string | SchemaValuePropertyError | SchemaValueIndexError

const SchemaValueError: Schema.Schema<SchemaValueError> = Schema.Union(
  Schema.String,
  Schema.suspend((): Schema.Schema<SchemaValuePropertyError> => SchemaValuePropertyError),
  Schema.suspend((): Schema.Schema<SchemaValueIndexError> => SchemaValueIndexError)
)

const SchemaValuePropertyError: Schema.Schema<SchemaValuePropertyError> = Schema.Struct({
  property: Schema.String,
  errors: Schema.Array(SchemaValueError)
}).annotations({ identifier: "SchemaValuePropertyError" })

const SchemaValueIndexError: Schema.Schema<SchemaValueIndexError> = Schema.Struct({
  index: Schema.Int,
  errors: Schema.Array(SchemaValueError)
}).annotations({ identifier: "SchemaValueIndexError" })

export const SchemaValuesValidationResponse = Schema.Struct({
  errors: Schema.Array(SchemaValueError),
  valid: Schema.Boolean
}).annotations({ identifier: "SchemaValuesValidationResponse" })
