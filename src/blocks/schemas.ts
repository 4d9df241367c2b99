/** Block types and block schemas on the wire: records, bodies and filters, as the reference has them. */
import { Schema } from "effect"
import { criterion, Criterion, Filter } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { LimitField, OffsetField } from "../domain/pagination.ts"
import { JsonObject, nullable, ObjectName, strictBody } from "../domain/schemas.ts"
import { Timestamp } from "../domain/time.ts"

export const DEFAULT_BLOCK_SCHEMA_VERSION = "non-versioned"

export const BlockType = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  slug: Schema.String,
  logo_url: Schema.NullOr(Schema.String),
  documentation_url: Schema.NullOr(Schema.String),
  description: Schema.NullOr(Schema.String),
  code_example: Schema.NullOr(Schema.String),
  is_protected: Schema.Boolean
}).annotations({ identifier: "BlockType" })
export type BlockType = typeof BlockType.Type

export const BlockSchema = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  checksum: Schema.String,
  fields: JsonObject,
  block_type_id: Schema.NullOr(Id),
  block_type: Schema.NullOr(BlockType),
  capabilities: Schema.Array(Schema.String),
  version: Schema.String
}).annotations({ identifier: "BlockSchema" })
export type BlockSchema = typeof BlockSchema.Type

const BlockTypeSlug = Schema.String.pipe(
  Schema.filter((slug) => /^[a-z0-9-]*$/.test(slug) || "Block type slug must only contain lowercase letters, numbers, and dashes.")
)

export const BlockTypeCreate = strictBody(
  {
    name: ObjectName,
    slug: BlockTypeSlug,
    logo_url: nullable(Schema.String),
    documentation_url: nullable(Schema.String),
    description: nullable(Schema.String),
    code_example: nullable(Schema.String)
  },
  "BlockTypeCreate"
)
export type BlockTypeCreate = typeof BlockTypeCreate.Type

/** Only the given fields change; null clears one. */
export const BlockTypeUpdate = strictBody(
  {
    logo_url: Schema.optional(Schema.NullOr(Schema.String)),
    documentation_url: Schema.optional(Schema.NullOr(Schema.String)),
    description: Schema.optional(Schema.NullOr(Schema.String)),
    code_example: Schema.optional(Schema.NullOr(Schema.String))
  },
  "BlockTypeUpdate"
)
export type BlockTypeUpdate = typeof BlockTypeUpdate.Type

export const BlockSchemaCreate = strictBody(
  {
    fields: Schema.optionalWith(JsonObject, { default: () => ({}) }),
    block_type_id: Id,
    capabilities: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
    version: Schema.optionalWith(Schema.String, { default: () => DEFAULT_BLOCK_SCHEMA_VERSION })
  },
  "BlockSchemaCreate"
)
export type BlockSchemaCreate = typeof BlockSchemaCreate.Type

/** Block type criteria are always all required (no operator). */
export const BlockTypeFilter = Filter.all("BlockTypeFilter", {
  name: Criterion.custom("BlockTypeFilterName", { like_: criterion(Schema.String) }, (sql, c) =>
    c.like_ ? [sql`block_type.name ILIKE ${"%" + c.like_ + "%"}`] : []),
  slug: Criterion.oneOf("BlockTypeFilterSlug", "block_type.slug", "text", Schema.String, ["any_"])
})
export type BlockTypeFilter = typeof BlockTypeFilter.Type

export const BlockSchemaFilter = Filter.make("BlockSchemaFilter", {
  block_type_id: Criterion.oneOf("BlockSchemaFilterBlockTypeId", "block_schema.block_type_id", "uuid", Id, ["any_"]),
  // An empty list asks for nothing.
  block_capabilities: Criterion.custom("BlockSchemaFilterCapabilities", { all_: criterion(Schema.Array(Schema.String)) }, (sql, c) =>
    c.all_ != null && c.all_.length > 0 ? [sql`block_schema.capabilities @> ${JSON.stringify(c.all_)}::jsonb`] : []),
  id: Criterion.oneOf("BlockSchemaFilterId", "block_schema.id", "uuid", Id, ["any_"]),
  version: Criterion.oneOf("BlockSchemaFilterVersion", "block_schema.version", "text", Schema.String, ["any_"])
})
export type BlockSchemaFilter = typeof BlockSchemaFilter.Type

export const ReadBlockTypesBody = Schema.Struct({
  block_types: criterion(BlockTypeFilter),
  block_schemas: criterion(BlockSchemaFilter),
  offset: OffsetField,
  limit: LimitField
})

export const ReadBlockSchemasBody = Schema.Struct({
  block_schemas: criterion(BlockSchemaFilter),
  offset: OffsetField,
  limit: LimitField
})

/** A reference from one block schema's property to another block's schema. */
export interface SchemaReference {
  readonly block_schema_checksum: string
  readonly block_type_slug: string
}
