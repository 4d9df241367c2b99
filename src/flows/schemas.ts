/** Flows on the wire: records, create/update bodies, filter and sort, as the reference has them. */
import { Schema } from "effect"
import { criterion, operatorField, strictStruct } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { PaginationResponse, queryBodies } from "../domain/pagination.ts"
import { Labels, ObjectName, strictBody, Tags } from "../domain/schemas.ts"
import { Timestamp } from "../domain/time.ts"

export const Flow = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  tags: Tags,
  labels: Schema.NullOr(Labels)
}).annotations({ identifier: "Flow" })
export type Flow = typeof Flow.Type

export const FlowCreate = strictBody(
  {
    name: ObjectName,
    tags: Schema.optionalWith(Tags, { default: () => [] }),
    labels: Schema.optionalWith(Schema.NullOr(Labels), { default: () => ({}) })
  },
  "FlowCreate"
)

export const FlowUpdate = strictBody({ tags: Schema.optional(Tags) }, "FlowUpdate")

export const FlowFilter = strictStruct(
  {
    operator: operatorField,
    id: criterion(strictStruct({ any_: criterion(Schema.Array(Id)), not_any_: criterion(Schema.Array(Id)) }, "FlowFilterId")),
    deployment: criterion(strictStruct({ operator: operatorField, is_null_: criterion(Schema.Boolean) }, "FlowFilterDeployment")),
    name: criterion(strictStruct({ any_: criterion(Schema.Array(Schema.String)), like_: criterion(Schema.String) }, "FlowFilterName")),
    tags: criterion(
      strictStruct(
        { operator: operatorField, all_: criterion(Schema.Array(Schema.String)), is_null_: criterion(Schema.Boolean) },
        "FlowFilterTags"
      )
    )
  },
  "FlowFilter"
)
export type FlowFilter = typeof FlowFilter.Type

export const FlowSort = Schema.Literal("CREATED_DESC", "UPDATED_DESC", "NAME_ASC", "NAME_DESC").annotations({
  identifier: "FlowSort"
})
export type FlowSort = typeof FlowSort.Type

const bodies = queryBodies({ flows: criterion(FlowFilter) }, FlowSort, "NAME_ASC")
export const ReadFlowsBody = bodies.read
export const CountFlowsBody = bodies.count
export const PaginateFlowsBody = bodies.paginate

export const FlowPaginationResponse = PaginationResponse(Flow, "FlowPaginationResponse")

export const BulkDeleteFlowsBody = Schema.Struct({
  flows: criterion(FlowFilter),
  limit: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 50)), { default: () => 50 })
})

export const FlowBulkDeleteResponse = Schema.Struct({ deleted: Schema.Array(Id) }).annotations({
  identifier: "FlowBulkDeleteResponse"
})
