/** FlowFilter: its wire schema and its fields as conditions on the `flow` table. */
import { Schema } from "effect"
import { criterion, Field, type FilterSpec, operatorField, strictStruct } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import * as Lax from "../domain/lax.ts"

export const FlowFilter = strictStruct(
  {
    operator: operatorField,
    id: criterion(strictStruct({ any_: criterion(Schema.Array(Id)), not_any_: criterion(Schema.Array(Id)) }, "FlowFilterId")),
    deployment: criterion(strictStruct({ operator: operatorField, is_null_: criterion(Lax.Bool) }, "FlowFilterDeployment")),
    name: criterion(strictStruct({ any_: criterion(Schema.Array(Schema.String)), like_: criterion(Schema.String) }, "FlowFilterName")),
    tags: criterion(
      strictStruct(
        { operator: operatorField, all_: criterion(Schema.Array(Schema.String)), is_null_: criterion(Lax.Bool) },
        "FlowFilterTags"
      )
    )
  },
  "FlowFilter"
)
export type FlowFilter = typeof FlowFilter.Type

export const flowFilterSpec: FilterSpec = {
  id: Field.oneOf("flow.id", "uuid"),
  name: Field.text("flow.name"),
  tags: Field.tags("flow.tags"),
  // Flows with (is_null_ false) or without (true) a deployment.
  deployment: (sql, c) =>
    Field.exists(sql, c.is_null_ == null ? undefined : !c.is_null_, "deployment WHERE deployment.flow_id = flow.id")
}
