/** TaskRunFilter: its criteria, each its wire schema and its condition on the `task_run` table. */
import { Schema } from "effect"
import { criterion, Criterion, Field, Filter, operatorField } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import * as Lax from "../domain/lax.ts"
import { StateType } from "../domain/states.ts"

const TaskRunFilterState = Filter.make("TaskRunFilterState", {
  type: Criterion.oneOf("TaskRunFilterStateType", "task_run.state_type", "text", StateType, ["any_"]),
  name: Criterion.oneOf("TaskRunFilterStateName", "task_run.state_name", "text", Schema.String, ["any_"])
})

export const TaskRunFilter = Filter.make("TaskRunFilter", {
  id: Criterion.oneOf("TaskRunFilterId", "task_run.id", "uuid", Id, ["any_"]),
  name: Criterion.text("TaskRunFilterName", "task_run.name", ["any_", "like_"]),
  tags: Criterion.tags("TaskRunFilterTags", "task_run.tags", ["operator", "all_", "is_null_"]),
  state: Criterion.nested(TaskRunFilterState),
  start_time: Criterion.time("TaskRunFilterStartTime", "task_run.start_time", ["before_", "after_", "is_null_"]),
  end_time: Criterion.time("TaskRunFilterEndTime", "task_run.end_time", ["before_", "after_", "is_null_"]),
  expected_start_time: Criterion.time("TaskRunFilterExpectedStartTime", "task_run.expected_start_time", ["before_", "after_"]),
  // Task runs that started a subflow (or not).
  subflow_runs: Criterion.custom("TaskRunFilterSubFlowRuns", { exists_: criterion(Lax.Bool) }, (sql, c) =>
    Field.exists(sql, c.exists_, "flow_run WHERE flow_run.parent_task_run_id = task_run.id")),
  // is_null_ is false unless given, as the reference has it: a flow_run_id criterion leaves out task
  // runs without a flow run.
  flow_run_id: Criterion.custom(
    "TaskRunFilterFlowRunId",
    {
      operator: operatorField,
      any_: criterion(Schema.Array(Id)),
      is_null_: Schema.optionalWith(Schema.NullOr(Lax.Bool), { default: () => false })
    },
    (sql, c) => Field.oneOf("task_run.flow_run_id", "uuid")(sql, c)
  )
})
export type TaskRunFilter = typeof TaskRunFilter.Type
