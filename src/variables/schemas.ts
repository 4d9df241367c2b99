/** Variables on the wire: records, create/update bodies, filter and sort, as the reference has them. */
import { Schema } from "effect"
import { criterion, Criterion, Filter } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { LimitField, OffsetField } from "../domain/pagination.ts"
import { JsonValue, strictBody, Tags } from "../domain/schemas.ts"
import { Timestamp } from "../domain/time.ts"

export const MAX_VARIABLE_VALUE_LENGTH = 5000

/** At most 255 characters (checked first, as the reference does); lowercase letters, digits, dashes and underscores. */
const VariableName = Schema.String.pipe(
  Schema.maxLength(255),
  Schema.filter((name) =>
    /^[a-z0-9_-]*$/.test(name) || "Variable name must only contain lowercase letters, numbers, and dashes or underscores."
  )
)

/** Any JSON value; its compact JSON at most 5000 bytes. */
const VariableValue = JsonValue.pipe(
  Schema.filter((value) =>
    value === null || new TextEncoder().encode(JSON.stringify(value)).length <= MAX_VARIABLE_VALUE_LENGTH ||
    `Variable value must be less than ${MAX_VARIABLE_VALUE_LENGTH} characters`
  )
)

export const Variable = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  value: Schema.Unknown,
  tags: Tags
}).annotations({ identifier: "Variable" })
export type Variable = typeof Variable.Type

export const VariableCreate = strictBody(
  {
    name: VariableName,
    value: VariableValue,
    tags: Schema.optionalWith(Tags, { default: () => [] })
  },
  "VariableCreate"
)
export type VariableCreate = typeof VariableCreate.Type

/** Every field optional; only the given ones change. */
export const VariableUpdate = strictBody(
  {
    name: Schema.optional(Schema.NullOr(VariableName)),
    value: Schema.optional(VariableValue),
    tags: Schema.optional(Schema.NullOr(Tags))
  },
  "VariableUpdate"
)
export type VariableUpdate = typeof VariableUpdate.Type

export const VariableFilter = Filter.make("VariableFilter", {
  id: Criterion.oneOf("VariableFilterId", "variable.id", "uuid", Id, ["any_"]),
  name: Criterion.text("VariableFilterName", "variable.name", ["any_", "like_"]),
  tags: Criterion.tags("VariableFilterTags", "variable.tags", ["operator", "all_", "is_null_"])
})
export type VariableFilter = typeof VariableFilter.Type

export const VariableSort = Schema.Literal("CREATED_DESC", "UPDATED_DESC", "NAME_DESC", "NAME_ASC").annotations({
  identifier: "VariableSort"
})
export type VariableSort = typeof VariableSort.Type

export const ReadVariablesBody = Schema.Struct({
  variables: criterion(VariableFilter),
  sort: Schema.optionalWith(VariableSort, { default: () => "NAME_ASC" as const }),
  offset: OffsetField,
  limit: LimitField
})

export const CountVariablesBody = Schema.Struct({ variables: criterion(VariableFilter) })
