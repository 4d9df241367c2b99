/** Block types and block schemas on the wire: records, bodies and filters, as the reference has them. */
import { Schema } from "effect"
import { criterion, Field, type FilterSpec, operatorField, strictStruct } from "../domain/filters.ts"
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

const strings = criterion(Schema.Array(Schema.String))
const ids = criterion(Schema.Array(Id))

/** Block type criteria are always all required (no operator). */
export const BlockTypeFilter = strictStruct(
  {
    name: criterion(strictStruct({ like_: criterion(Schema.String) }, "BlockTypeFilterName")),
    slug: criterion(strictStruct({ any_: strings }, "BlockTypeFilterSlug"))
  },
  "BlockTypeFilter"
)
export type BlockTypeFilter = typeof BlockTypeFilter.Type

export const BlockSchemaFilter = strictStruct(
  {
    operator: operatorField,
    block_type_id: criterion(strictStruct({ any_: ids }, "BlockSchemaFilterBlockTypeId")),
    block_capabilities: criterion(strictStruct({ all_: strings }, "BlockSchemaFilterCapabilities")),
    id: criterion(strictStruct({ any_: ids }, "BlockSchemaFilterId")),
    version: criterion(strictStruct({ any_: strings }, "BlockSchemaFilterVersion"))
  },
  "BlockSchemaFilter"
)
export type BlockSchemaFilter = typeof BlockSchemaFilter.Type

export const blockTypeFilterSpec: FilterSpec = {
  name: (sql, c) => (c.like_ ? [sql`block_type.name ILIKE ${"%" + c.like_ + "%"}`] : []),
  slug: Field.oneOf("block_type.slug", "text")
}

export const blockSchemaFilterSpec: FilterSpec = {
  block_type_id: Field.oneOf("block_schema.block_type_id", "uuid"),
  // An empty list asks for nothing.
  block_capabilities: (sql, c) =>
    c.all_ != null && c.all_.length > 0 ? [sql`block_schema.capabilities @> ${JSON.stringify(c.all_)}::jsonb`] : [],
  id: Field.oneOf("block_schema.id", "uuid"),
  version: Field.oneOf("block_schema.version", "text")
}

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
