/** FlowRunFilter: its wire schema and its fields as conditions on the `flow_run` table. */
import { Schema } from "effect"
import { criterion, Field, type FilterSpec, operatorField, strictStruct } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { StateType } from "../domain/states.ts"
import { Timestamp } from "../domain/time.ts"
import * as Lax from "../domain/lax.ts"

const ids = criterion(Schema.Array(Id))
const strings = criterion(Schema.Array(Schema.String))
const flag = criterion(Lax.Bool)
const at = criterion(Timestamp)

export const FlowRunFilter = strictStruct(
  {
    operator: operatorField,
    id: criterion(strictStruct({ any_: ids, not_any_: ids }, "FlowRunFilterId")),
    name: criterion(strictStruct({ any_: strings, like_: criterion(Schema.String) }, "FlowRunFilterName")),
    tags: criterion(strictStruct({ operator: operatorField, all_: strings, any_: strings, is_null_: flag }, "FlowRunFilterTags")),
    deployment_id: criterion(strictStruct({ operator: operatorField, any_: ids, is_null_: flag }, "FlowRunFilterDeploymentId")),
    work_queue_name: criterion(strictStruct({ operator: operatorField, any_: strings, is_null_: flag }, "FlowRunFilterWorkQueueName")),
    state: criterion(
      strictStruct(
        {
          operator: operatorField,
          type: criterion(strictStruct({ any_: criterion(Schema.Array(StateType)), not_any_: criterion(Schema.Array(StateType)) }, "FlowRunFilterStateType")),
          name: criterion(strictStruct({ any_: strings, not_any_: strings }, "FlowRunFilterStateName"))
        },
        "FlowRunFilterState"
      )
    ),
    flow_version: criterion(strictStruct({ any_: strings }, "FlowRunFilterFlowVersion")),
    start_time: criterion(strictStruct({ before_: at, after_: at, is_null_: flag }, "FlowRunFilterStartTime")),
    end_time: criterion(strictStruct({ before_: at, after_: at, is_null_: flag }, "FlowRunFilterEndTime")),
    expected_start_time: criterion(strictStruct({ before_: at, after_: at }, "FlowRunFilterExpectedStartTime")),
    next_scheduled_start_time: criterion(strictStruct({ before_: at, after_: at }, "FlowRunFilterNextScheduledStartTime")),
    parent_flow_run_id: criterion(strictStruct({ operator: operatorField, any_: ids }, "FlowRunFilterParentFlowRunId")),
    parent_task_run_id: criterion(strictStruct({ operator: operatorField, any_: ids, is_null_: flag }, "FlowRunFilterParentTaskRunId")),
    idempotency_key: criterion(strictStruct({ any_: strings, not_any_: strings }, "FlowRunFilterIdempotencyKey")),
    created_by: criterion(strictStruct({ operator: operatorField, id_: ids, type_: strings, is_null_: flag }, "FlowRunFilterCreatedBy"))
  },
  "FlowRunFilter"
)
export type FlowRunFilter = typeof FlowRunFilter.Type

export const flowRunFilterSpec: FilterSpec = {
  id: Field.oneOf("flow_run.id", "uuid"),
  name: Field.text("flow_run.name"),
  tags: Field.tags("flow_run.tags"),
  deployment_id: Field.oneOf("flow_run.deployment_id", "uuid"),
  work_queue_name: Field.oneOf("flow_run.work_queue_name", "text"),
  state: Field.nested({
    type: Field.oneOf("flow_run.state_type", "text"),
    name: Field.oneOf("flow_run.state_name", "text")
  }),
  flow_version: Field.oneOf("flow_run.flow_version", "text"),
  start_time: Field.time("flow_run.start_time"),
  end_time: Field.time("flow_run.end_time"),
  expected_start_time: Field.time("flow_run.expected_start_time"),
  next_scheduled_start_time: Field.time("flow_run.next_scheduled_start_time"),
  // A subflow's parent flow run is the flow run of the task run that started it.
  parent_flow_run_id: (sql, c) =>
    c.any_ == null
      ? []
      : [sql`flow_run.parent_task_run_id IN (SELECT task_run.id FROM task_run WHERE task_run.flow_run_id = ANY(${c.any_}::uuid[]))`],
  parent_task_run_id: Field.oneOf("flow_run.parent_task_run_id", "uuid"),
  idempotency_key: Field.oneOf("flow_run.idempotency_key", "text"),
  created_by: (sql, c) => [
    ...(c.id_ != null ? [sql`(flow_run.created_by->>'id')::uuid = ANY(${c.id_}::uuid[])`] : []),
    ...(c.type_ != null ? [sql`flow_run.created_by->>'type' = ANY(${c.type_}::text[])`] : []),
    ...Field.nullness("flow_run.created_by")(sql, c)
  ]
}
