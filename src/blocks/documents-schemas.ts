/** Block documents on the wire: records, bodies, filters and sorts, as the reference has them. */
import { Schema } from "effect"
import { criterion, Criterion, Field, Filter } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { LimitField, OffsetField } from "../domain/pagination.ts"
import { JsonObject, ObjectName, strictBody } from "../domain/schemas.ts"
import { Timestamp } from "../domain/time.ts"
import { BlockSchema, BlockSchemaFilter, BlockType, BlockTypeFilter } from "./schemas.ts"
import * as Lax from "../domain/lax.ts"

export const BlockDocument = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.NullOr(Schema.String),
  data: JsonObject,
  block_schema_id: Id,
  block_schema: Schema.NullOr(BlockSchema),
  block_type_id: Id,
  block_type_name: Schema.NullOr(Schema.String),
  block_type: Schema.NullOr(BlockType),
  block_document_references: Schema.Record({ key: Schema.String, value: JsonObject }),
  is_anonymous: Schema.Boolean
}).annotations({ identifier: "BlockDocument" })
export type BlockDocument = typeof BlockDocument.Type

/** A document's name: no / % & > < and, when it is created, lowercase letters, numbers and dashes. */
const BlockDocumentName = ObjectName.pipe(
  Schema.filter(
    (name) => /^[a-z0-9-]*$/.test(name) || "Block document name must only contain lowercase letters, numbers, and dashes."
  )
)

export const BlockDocumentCreate = strictBody(
  {
    name: Schema.optionalWith(Schema.NullOr(BlockDocumentName), { default: () => null }),
    data: Schema.optionalWith(JsonObject, { default: () => ({}) }),
    block_schema_id: Id,
    block_type_id: Id,
    is_anonymous: Schema.optionalWith(Lax.Bool, { default: () => false })
  },
  "BlockDocumentCreate"
).pipe(
  Schema.filter((body) => body.is_anonymous || (body.name !== null && body.name !== "") || "Names must be provided for block documents.")
)
export type BlockDocumentCreate = typeof BlockDocumentCreate.Type

export const BlockDocumentUpdate = strictBody(
  {
    block_schema_id: Schema.optionalWith(Schema.NullOr(Id), { default: () => null }),
    data: Schema.optional(JsonObject),
    merge_existing_data: Schema.optionalWith(Lax.Bool, { default: () => true })
  },
  "BlockDocumentUpdate"
)
export type BlockDocumentUpdate = typeof BlockDocumentUpdate.Type

export const BlockDocumentFilter = Filter.make("BlockDocumentFilter", {
  id: Criterion.oneOf("BlockDocumentFilterId", "block_document.id", "uuid", Id, ["any_"]),
  // Anonymous documents are left out unless a filter asks for them.
  is_anonymous: Criterion.withDefault(
    Criterion.custom("BlockDocumentFilterIsAnonymous", { eq_: criterion(Lax.Bool) }, (sql, c) =>
      c.eq_ != null ? [sql`block_document.is_anonymous = ${c.eq_}`] : []),
    () => ({ eq_: false })
  ),
  block_type_id: Criterion.oneOf("BlockDocumentFilterBlockTypeId", "block_document.block_type_id", "uuid", Id, ["any_"]),
  name: Criterion.custom(
    "BlockDocumentFilterName",
    { any_: criterion(Schema.Array(Schema.String)), like_: criterion(Schema.String) },
    (sql, c) => [
      ...Field.oneOf("block_document.name", "text")(sql, c),
      ...(c.like_ ? [sql`block_document.name ILIKE ${"%" + c.like_ + "%"}`] : [])
    ]
  )
})
export type BlockDocumentFilter = typeof BlockDocumentFilter.Type

export const BlockDocumentSort = Schema.Literal("NAME_DESC", "NAME_ASC", "BLOCK_TYPE_AND_NAME_ASC").annotations({
  identifier: "BlockDocumentSort"
})
export type BlockDocumentSort = typeof BlockDocumentSort.Type

const filters = {
  block_documents: criterion(BlockDocumentFilter),
  block_types: criterion(BlockTypeFilter),
  block_schemas: criterion(BlockSchemaFilter)
}

export const ReadBlockDocumentsBody = Schema.Struct({
  ...filters,
  include_secrets: Schema.optionalWith(Lax.Bool, { default: () => false }),
  sort: Schema.optionalWith(Schema.NullOr(BlockDocumentSort), { default: () => "NAME_ASC" as const }),
  offset: OffsetField,
  limit: LimitField
})

export const CountBlockDocumentsBody = Schema.Struct(filters)

/** The stored documents a query asks for: its filters, or (none given) every named document. */
export interface BlockDocumentQuery {
  readonly block_documents?: BlockDocumentFilter | null | undefined
  readonly block_types?: BlockTypeFilter | null | undefined
  readonly block_schemas?: BlockSchemaFilter | null | undefined
}
