/** Block types, schemas and documents for tests: made through the Api, typed as the wire has them. */
import { Effect } from "effect"
import { BlockDocument } from "../../src/blocks/documents-schemas.ts"
import { BlockSchema, BlockType } from "../../src/blocks/schemas.ts"
import { okAs } from "./api.ts"
import { request } from "./server.ts"

export interface Block {
  readonly type: typeof BlockType.Encoded
  readonly schema: typeof BlockSchema.Encoded
}

/** A block type with one schema whose secret fields are `secrets`. */
export const makeBlock = (slug: string, secrets: Array<string> = [], capabilities: Array<string> = []) =>
  Effect.gen(function* () {
    const type = okAs(BlockType, yield* request("POST", "/block_types/", { body: { name: `Type ${slug}`, slug } }), 201)
    const schema = okAs(
      BlockSchema,
      yield* request("POST", "/block_schemas/", {
        body: {
          block_type_id: type.id,
          capabilities,
          fields: { title: slug, type: "object", properties: {}, block_type_slug: slug, secret_fields: secrets, block_schema_references: {} }
        }
      }),
      201
    )
    return { type, schema } satisfies Block
  })

export const createDocument = (block: Block, body: Record<string, unknown>) =>
  request("POST", "/block_documents/", { body: { block_type_id: block.type.id, block_schema_id: block.schema.id, ...body } })

export const makeDocument = (block: Block, name: string, data: Record<string, unknown>) =>
  Effect.map(createDocument(block, { name, data }), (res) => okAs(BlockDocument, res, 201))
