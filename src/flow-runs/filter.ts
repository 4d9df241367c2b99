/** FlowRunFilter: its criteria, each its wire schema and its condition on the `flow_run` table. */
import { Schema } from "effect"
import { criterion, Criterion, Field, Filter, operatorField } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import * as Lax from "../domain/lax.ts"
import { StateType } from "../domain/states.ts"

const FlowRunFilterState = Filter.make("FlowRunFilterState", {
  type: Criterion.oneOf("FlowRunFilterStateType", "flow_run.state_type", "text", StateType, ["any_", "not_any_"]),
  name: Criterion.oneOf("FlowRunFilterStateName", "flow_run.state_name", "text", Schema.String, ["any_", "not_any_"])
})

export const FlowRunFilter = Filter.make("FlowRunFilter", {
  id: Criterion.oneOf("FlowRunFilterId", "flow_run.id", "uuid", Id, ["any_", "not_any_"]),
  name: Criterion.text("FlowRunFilterName", "flow_run.name", ["any_", "like_"]),
  tags: Criterion.tags("FlowRunFilterTags", "flow_run.tags", ["operator", "all_", "any_", "is_null_"]),
  deployment_id: Criterion.oneOf("FlowRunFilterDeploymentId", "flow_run.deployment_id", "uuid", Id, ["operator", "any_", "is_null_"]),
  work_queue_name: Criterion.oneOf("FlowRunFilterWorkQueueName", "flow_run.work_queue_name", "text", Schema.String, ["operator", "any_", "is_null_"]),
  state: Criterion.nested(FlowRunFilterState),
  flow_version: Criterion.oneOf("FlowRunFilterFlowVersion", "flow_run.flow_version", "text", Schema.String, ["any_"]),
  start_time: Criterion.time("FlowRunFilterStartTime", "flow_run.start_time", ["before_", "after_", "is_null_"]),
  end_time: Criterion.time("FlowRunFilterEndTime", "flow_run.end_time", ["before_", "after_", "is_null_"]),
  expected_start_time: Criterion.time("FlowRunFilterExpectedStartTime", "flow_run.expected_start_time", ["before_", "after_"]),
  next_scheduled_start_time: Criterion.time("FlowRunFilterNextScheduledStartTime", "flow_run.next_scheduled_start_time", ["before_", "after_"]),
  // A subflow's parent flow run is the flow run of the task run that started it.
  parent_flow_run_id: Criterion.custom(
    "FlowRunFilterParentFlowRunId",
    { operator: operatorField, any_: criterion(Schema.Array(Id)) },
    (sql, c) =>
      c.any_ == null
        ? []
        : [sql`flow_run.parent_task_run_id IN (SELECT task_run.id FROM task_run WHERE task_run.flow_run_id = ANY(${c.any_}::uuid[]))`]
  ),
  parent_task_run_id: Criterion.oneOf("FlowRunFilterParentTaskRunId", "flow_run.parent_task_run_id", "uuid", Id, ["operator", "any_", "is_null_"]),
  idempotency_key: Criterion.oneOf("FlowRunFilterIdempotencyKey", "flow_run.idempotency_key", "text", Schema.String, ["any_", "not_any_"]),
  created_by: Criterion.custom(
    "FlowRunFilterCreatedBy",
    { operator: operatorField, id_: criterion(Schema.Array(Id)), type_: criterion(Schema.Array(Schema.String)), is_null_: criterion(Lax.Bool) },
    (sql, c) => [
      ...(c.id_ != null ? [sql`(flow_run.created_by->>'id')::uuid = ANY(${c.id_}::uuid[])`] : []),
      ...(c.type_ != null ? [sql`flow_run.created_by->>'type' = ANY(${c.type_}::text[])`] : []),
      ...Field.nullness("flow_run.created_by")(sql, c)
    ]
  )
})
export type FlowRunFilter = typeof FlowRunFilter.Type
