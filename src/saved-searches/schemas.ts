/** Saved searches on the wire, as the reference has them. */
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { LimitField, OffsetField } from "../domain/pagination.ts"
import { JsonValue, strictBody } from "../domain/schemas.ts"
import { Timestamp } from "../domain/time.ts"

/** One filter of a search; other keys are dropped. */
export const SavedSearchFilter = Schema.Struct({
  object: Schema.String,
  property: Schema.String,
  type: Schema.String,
  operation: Schema.String,
  value: JsonValue
}).annotations({ identifier: "SavedSearchFilter", parseOptions: { onExcessProperty: "ignore" } })

export const SavedSearch = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  filters: Schema.Array(SavedSearchFilter)
}).annotations({ identifier: "SavedSearch" })
export type SavedSearch = typeof SavedSearch.Type

export const SavedSearchCreate = strictBody(
  { name: Schema.String, filters: Schema.optionalWith(Schema.Array(SavedSearchFilter), { default: () => [] }) },
  "SavedSearchCreate"
)

export const ReadSavedSearchesBody = Schema.Struct({ offset: OffsetField, limit: LimitField })
