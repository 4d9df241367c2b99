import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import * as Lax from "../domain/lax.ts"
import {
  BlockDocument,
  BlockDocumentCreate,
  BlockDocumentUpdate,
  CountBlockDocumentsBody,
  ReadBlockDocumentsBody
} from "./documents-schemas.ts"
import {
  BlockDocumentConflictResponse,
  BlockDocumentNameTakenResponse,
  BlockDocumentNotFoundResponse,
  BlockDocumentReferencedResponse,
  BlockReferenceCycleResponse,
  BlockReferenceInvalidResponse,
  BlockSchemaConflictResponse,
  BlockSchemaMigrationInvalidResponse,
  BlockSchemaNotFoundResponse,
  BlockSchemaProtectedResponse,
  BlockSchemaTypeNotFoundResponse,
  BlockTypeNameReservedResponse,
  BlockTypeNameTakenResponse,
  BlockTypeNotFoundResponse,
  BlockTypeProtectedResponse,
  NestedBlockTypeNotFoundResponse
} from "./errors.ts"
import {
  BlockSchema,
  BlockSchemaCreate,
  BlockType,
  BlockTypeCreate,
  BlockTypeUpdate,
  ReadBlockSchemasBody,
  ReadBlockTypesBody
} from "./schemas.ts"

const IdPath = Schema.Struct({ id: Id })
const SlugPath = Schema.Struct({ slug: Schema.String })

/** `include_secrets`: whether secret fields come back as stored instead of obfuscated. */
export const IncludeSecrets = Schema.Struct({
  include_secrets: Schema.optionalWith(Lax.TextBool, { default: () => false })
})

export class BlockTypesApi extends HttpApiGroup.make("blockTypes")
  .add(
    HttpApiEndpoint.post("create", "/")
      .setPayload(BlockTypeCreate)
      .addSuccess(BlockType, { status: 201 })
      .addError(BlockTypeNameReservedResponse)
      .addError(BlockTypeNameTakenResponse)
  )
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadBlockTypesBody).addSuccess(Schema.Array(BlockType)))
  // Storing the system schemas fails only when a type is deleted meanwhile.
  .add(
    HttpApiEndpoint.post("installSystem", "/install_system_block_types")
      .addSuccess(Schema.Null)
      .addError(BlockSchemaTypeNotFoundResponse)
      .addError(BlockSchemaNotFoundResponse)
      .addError(NestedBlockTypeNotFoundResponse)
      .addError(BlockSchemaConflictResponse)
  )
  .add(HttpApiEndpoint.get("readBySlug", "/slug/:slug").setPath(SlugPath).addSuccess(BlockType))
  .add(
    HttpApiEndpoint.get("readDocuments", "/slug/:slug/block_documents")
      .setPath(SlugPath)
      .setUrlParams(IncludeSecrets)
      .addSuccess(Schema.Array(BlockDocument))
  )
  .add(
    HttpApiEndpoint.get("readDocumentByName", "/slug/:slug/block_documents/name/:block_document_name")
      .setPath(Schema.Struct({ slug: Schema.String, block_document_name: Schema.String }))
      .setUrlParams(IncludeSecrets)
      .addSuccess(BlockDocument)
      .addError(BlockDocumentNotFoundResponse)
  )
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(BlockType))
  .add(HttpApiEndpoint.patch("update", "/:id").setPath(IdPath).setPayload(BlockTypeUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void).addError(BlockTypeProtectedResponse))
  .addError(BlockTypeNotFoundResponse)
  .prefix("/block_types")
{}

export class BlockSchemasApi extends HttpApiGroup.make("blockSchemas")
  // 201 when the schema was created, 200 when one with its checksum and version existed.
  .add(
    HttpApiEndpoint.post("create", "/")
      .setPayload(BlockSchemaCreate)
      .addSuccess(BlockSchema)
      .addError(BlockSchemaTypeNotFoundResponse)
      .addError(NestedBlockTypeNotFoundResponse)
      .addError(BlockSchemaConflictResponse)
  )
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadBlockSchemasBody).addSuccess(Schema.Array(BlockSchema)))
  .add(
    HttpApiEndpoint.get("readByChecksum", "/checksum/:checksum")
      .setPath(Schema.Struct({ checksum: Schema.String }))
      .setUrlParams(Schema.Struct({ version: Schema.optional(Schema.String) }))
      .addSuccess(BlockSchema)
  )
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(BlockSchema))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void).addError(BlockSchemaProtectedResponse))
  .addError(BlockSchemaNotFoundResponse)
  .prefix("/block_schemas")
{}

export class BlockCapabilitiesApi extends HttpApiGroup.make("blockCapabilities")
  .add(HttpApiEndpoint.get("list", "/").addSuccess(Schema.Array(Schema.String)))
  .prefix("/block_capabilities")
{}

export class BlockDocumentsApi extends HttpApiGroup.make("blockDocuments")
  .add(
    HttpApiEndpoint.post("create", "/")
      .setPayload(BlockDocumentCreate)
      .addSuccess(BlockDocument, { status: 201 })
      .addError(BlockDocumentConflictResponse)
      .addError(BlockDocumentNameTakenResponse)
      .addError(BlockReferenceInvalidResponse)
  )
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadBlockDocumentsBody).addSuccess(Schema.Array(BlockDocument)))
  .add(HttpApiEndpoint.post("count", "/count").setPayload(CountBlockDocumentsBody).addSuccess(Schema.Int))
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).setUrlParams(IncludeSecrets).addSuccess(BlockDocument))
  .add(
    HttpApiEndpoint.patch("update", "/:id")
      .setPath(IdPath)
      .setPayload(BlockDocumentUpdate)
      .addSuccess(Schema.Void)
      .addError(BlockDocumentConflictResponse)
      .addError(BlockReferenceInvalidResponse)
      .addError(BlockReferenceCycleResponse)
      .addError(BlockSchemaMigrationInvalidResponse)
  )
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void).addError(BlockDocumentReferencedResponse))
  .addError(BlockDocumentNotFoundResponse)
  .prefix("/block_documents")
{}
