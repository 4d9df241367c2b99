/** TaskRunFilter: its wire schema and its fields as conditions on the `task_run` table. */
import { Schema } from "effect"
import { criterion, Field, type FilterSpec, operatorField, strictStruct } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { StateType } from "../domain/states.ts"
import { Timestamp } from "../domain/time.ts"
import * as Lax from "../domain/lax.ts"

const strings = criterion(Schema.Array(Schema.String))
const flag = criterion(Lax.Bool)
const at = criterion(Timestamp)

export const TaskRunFilter = strictStruct(
  {
    operator: operatorField,
    id: criterion(strictStruct({ any_: criterion(Schema.Array(Id)) }, "TaskRunFilterId")),
    name: criterion(strictStruct({ any_: strings, like_: criterion(Schema.String) }, "TaskRunFilterName")),
    tags: criterion(strictStruct({ operator: operatorField, all_: strings, is_null_: flag }, "TaskRunFilterTags")),
    state: criterion(
      strictStruct(
        {
          operator: operatorField,
          type: criterion(strictStruct({ any_: criterion(Schema.Array(StateType)) }, "TaskRunFilterStateType")),
          name: criterion(strictStruct({ any_: strings }, "TaskRunFilterStateName"))
        },
        "TaskRunFilterState"
      )
    ),
    start_time: criterion(strictStruct({ before_: at, after_: at, is_null_: flag }, "TaskRunFilterStartTime")),
    end_time: criterion(strictStruct({ before_: at, after_: at, is_null_: flag }, "TaskRunFilterEndTime")),
    expected_start_time: criterion(strictStruct({ before_: at, after_: at }, "TaskRunFilterExpectedStartTime")),
    subflow_runs: criterion(strictStruct({ exists_: flag }, "TaskRunFilterSubFlowRuns")),
    flow_run_id: criterion(
      strictStruct(
        {
          operator: operatorField,
          any_: criterion(Schema.Array(Id)),
          is_null_: Schema.optionalWith(Schema.NullOr(Lax.Bool), { default: () => false })
        },
        "TaskRunFilterFlowRunId"
      )
    )
  },
  "TaskRunFilter"
)
export type TaskRunFilter = typeof TaskRunFilter.Type

export const taskRunFilterSpec: FilterSpec = {
  id: Field.oneOf("task_run.id", "uuid"),
  name: Field.text("task_run.name"),
  tags: Field.tags("task_run.tags"),
  state: Field.nested({
    type: Field.oneOf("task_run.state_type", "text"),
    name: Field.oneOf("task_run.state_name", "text")
  }),
  start_time: Field.time("task_run.start_time"),
  end_time: Field.time("task_run.end_time"),
  expected_start_time: Field.time("task_run.expected_start_time"),
  // Task runs that started a subflow (or not).
  subflow_runs: (sql, c) => Field.exists(sql, c.exists_, "flow_run WHERE flow_run.parent_task_run_id = task_run.id"),
  flow_run_id: Field.oneOf("task_run.flow_run_id", "uuid")
}
