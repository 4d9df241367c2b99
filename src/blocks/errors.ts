/** The blocks area's domain errors (types, schemas, documents), with the reference's status and body. */
import { Schema } from "effect"
import { fixedDetail, httpError, INTEGRITY_CONFLICT } from "../domain/errors.ts"

export class BlockTypeNotFound extends Schema.TaggedError<BlockTypeNotFound>()("BlockTypeNotFound", {
  detail: fixedDetail("Block type not found")
}) {}

/** A new block type whose slug another type has; the reference names it by the new type's name. */
export class BlockTypeNameTaken extends Schema.TaggedError<BlockTypeNameTaken>()("BlockTypeNameTaken", {
  detail: Schema.String
}) {}

export class BlockTypeNameReserved extends Schema.TaggedError<BlockTypeNameReserved>()("BlockTypeNameReserved", {
  detail: fixedDetail("Block type names beginning with 'Prefect' are reserved.")
}) {}

export class BlockTypeProtected extends Schema.TaggedError<BlockTypeProtected>()("BlockTypeProtected", {
  detail: fixedDetail("protected block types cannot be deleted.")
}) {}

export class BlockSchemaNotFound extends Schema.TaggedError<BlockSchemaNotFound>()("BlockSchemaNotFound", {
  detail: fixedDetail("Block schema not found")
}) {}

/** A new block schema for a block type that does not exist: the reference names the type's id. */
export class BlockSchemaTypeNotFound extends Schema.TaggedError<BlockSchemaTypeNotFound>()("BlockSchemaTypeNotFound", {
  detail: Schema.String
}) {}

/** A new block schema nests a block of a type (by slug) that is not registered. */
export class NestedBlockTypeNotFound extends Schema.TaggedError<NestedBlockTypeNotFound>()("NestedBlockTypeNotFound", {
  detail: Schema.String
}) {}

/** A block schema's type, or a schema it nests, was deleted while it was being stored. */
export class BlockSchemaConflict extends Schema.TaggedError<BlockSchemaConflict>()("BlockSchemaConflict", {
  detail: fixedDetail(INTEGRITY_CONFLICT)
}) {}

export class BlockSchemaProtected extends Schema.TaggedError<BlockSchemaProtected>()("BlockSchemaProtected", {
  detail: fixedDetail("Block schemas for protected block types cannot be deleted.")
}) {}

export class BlockDocumentNotFound extends Schema.TaggedError<BlockDocumentNotFound>()("BlockDocumentNotFound", {
  detail: fixedDetail("Block document not found")
}) {}

/** The block type already has a document of that name. */
export class BlockDocumentNameTaken extends Schema.TaggedError<BlockDocumentNameTaken>()("BlockDocumentNameTaken", {
  detail: fixedDetail("Block already exists")
}) {}

/** A document's type, schema or a document it references does not exist (or went away meanwhile). */
export class BlockDocumentConflict extends Schema.TaggedError<BlockDocumentConflict>()("BlockDocumentConflict", {
  detail: fixedDetail(INTEGRITY_CONFLICT)
}) {}

/** Deleting a document other documents reference would leave them without a nested block. */
export class BlockDocumentReferenced extends Schema.TaggedError<BlockDocumentReferenced>()("BlockDocumentReferenced", {
  detail: Schema.String
}) {}

/** A `$ref` without a usable `block_document_id`; the reference names the key. */
export class BlockReferenceInvalid extends Schema.TaggedError<BlockReferenceInvalid>()("BlockReferenceInvalid", {
  detail: Schema.String
}) {}

export class BlockReferenceCycle extends Schema.TaggedError<BlockReferenceCycle>()("BlockReferenceCycle", {
  detail: fixedDetail(
    "Cannot create block document reference: it would introduce a cycle into the block document references."
  )
}) {}

export class BlockSchemaMigrationInvalid extends Schema.TaggedError<BlockSchemaMigrationInvalid>()("BlockSchemaMigrationInvalid", {
  detail: fixedDetail("Must migrate block document to a block schema of the same block type.")
}) {}

/** The document asked for as the default result storage does not exist: the reference names its id. */
export class StorageBlockDocumentNotFound extends Schema.TaggedError<StorageBlockDocumentNotFound>()(
  "StorageBlockDocumentNotFound",
  { detail: Schema.String }
) {}

export const BlockTypeNotFoundResponse = httpError(BlockTypeNotFound, 404, { identifier: "BlockTypeNotFound" })
export const BlockTypeNameTakenResponse = httpError(BlockTypeNameTaken, 409, { identifier: "BlockTypeNameTaken" })
export const BlockTypeNameReservedResponse = httpError(BlockTypeNameReserved, 403, { identifier: "BlockTypeNameReserved" })
export const BlockTypeProtectedResponse = httpError(BlockTypeProtected, 403, { identifier: "BlockTypeProtected" })
export const BlockSchemaNotFoundResponse = httpError(BlockSchemaNotFound, 404, { identifier: "BlockSchemaNotFound" })
export const BlockSchemaTypeNotFoundResponse = httpError(BlockSchemaTypeNotFound, 404, { identifier: "BlockSchemaTypeNotFound" })
export const NestedBlockTypeNotFoundResponse = httpError(NestedBlockTypeNotFound, 409, { identifier: "NestedBlockTypeNotFound" })
export const BlockSchemaConflictResponse = httpError(BlockSchemaConflict, 409, { identifier: "BlockSchemaConflict" })
export const BlockSchemaProtectedResponse = httpError(BlockSchemaProtected, 403, { identifier: "BlockSchemaProtected" })
export const BlockDocumentNotFoundResponse = httpError(BlockDocumentNotFound, 404, { identifier: "BlockDocumentNotFound" })
export const BlockDocumentNameTakenResponse = httpError(BlockDocumentNameTaken, 409, { identifier: "BlockDocumentNameTaken" })
export const BlockDocumentConflictResponse = httpError(BlockDocumentConflict, 409, { identifier: "BlockDocumentConflict" })
export const BlockDocumentReferencedResponse = httpError(BlockDocumentReferenced, 409, { identifier: "BlockDocumentReferenced" })
export const BlockReferenceInvalidResponse = httpError(BlockReferenceInvalid, 400, { identifier: "BlockReferenceInvalid" })
export const BlockReferenceCycleResponse = httpError(BlockReferenceCycle, 400, { identifier: "BlockReferenceCycle" })
export const BlockSchemaMigrationInvalidResponse = httpError(BlockSchemaMigrationInvalid, 400, {
  identifier: "BlockSchemaMigrationInvalid"
})
export const StorageBlockDocumentNotFoundResponse = httpError(StorageBlockDocumentNotFound, 404, {
  identifier: "StorageBlockDocumentNotFound"
})
