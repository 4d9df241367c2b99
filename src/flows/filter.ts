/** FlowFilter: its criteria, each its wire schema and its condition on the `flow` table. */
import { Criterion, Field, Filter, operatorField } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import * as Lax from "../domain/lax.ts"
import { criterion } from "../domain/filters.ts"

export const FlowFilter = Filter.make("FlowFilter", {
  id: Criterion.oneOf("FlowFilterId", "flow.id", "uuid", Id, ["any_", "not_any_"]),
  // Flows with (is_null_ false) or without (true) a deployment.
  deployment: Criterion.custom("FlowFilterDeployment", { operator: operatorField, is_null_: criterion(Lax.Bool) }, (sql, c) =>
    Field.exists(sql, c.is_null_ == null ? undefined : !c.is_null_, "deployment WHERE deployment.flow_id = flow.id")),
  name: Criterion.text("FlowFilterName", "flow.name", ["any_", "like_"]),
  tags: Criterion.tags("FlowFilterTags", "flow.tags", ["operator", "all_", "is_null_"])
})
export type FlowFilter = typeof FlowFilter.Type
