import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BlockDocumentsRepo } from "../../src/blocks/documents-repo.ts"
import { BlockSchemasRepo } from "../../src/blocks/schemas-repo.ts"
import { BlockTypesRepo } from "../../src/blocks/types-repo.ts"
import { testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const schemaRow = (block_type_id: string) => ({
  checksum: "sha256:integrity",
  fields: { title: "Integrity" },
  capabilities: [],
  version: "1",
  block_type_id
})

// The writes whose constraint violations have a meaning fail with the area's errors, not a defect.
describe("block repositories and integrity violations", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("a schema another create stored first is found; a type gone is BlockSchemaConflict", () =>
      Effect.gen(function* () {
        const types = yield* BlockTypesRepo
        const schemas = yield* BlockSchemasRepo
        const type = yield* types.create({
          name: "integrity",
          slug: "integrity",
          logo_url: null,
          documentation_url: null,
          description: null,
          code_example: null
        })
        const first = yield* schemas.insert(schemaRow(type.id))
        expect(first.created).toBe(true)
        expect(yield* schemas.insert(schemaRow(type.id))).toEqual({ id: first.id, created: false })

        const orphan = yield* Effect.flip(schemas.insert({ ...schemaRow(MISSING), version: "2" }))
        expect(orphan._tag).toBe("BlockSchemaConflict")
        const dangling = yield* Effect.flip(schemas.addReference(first.id, MISSING, "child"))
        expect(dangling._tag).toBe("BlockSchemaConflict")

        const taken = yield* Effect.flip(types.create({
          name: "again",
          slug: "integrity",
          logo_url: null,
          documentation_url: null,
          description: null,
          code_example: null
        }))
        expect(taken).toMatchObject({ _tag: "BlockTypeNameTaken", detail: 'Block type with name "again" already exists' })
      })
    )

    it.effect("a document naming a type, schema or document that is gone is BlockDocumentConflict", () =>
      Effect.gen(function* () {
        const types = yield* BlockTypesRepo
        const schemas = yield* BlockSchemasRepo
        const documents = yield* BlockDocumentsRepo
        const type = yield* types.create({
          name: "documents",
          slug: "documents",
          logo_url: null,
          documentation_url: null,
          description: null,
          code_example: null
        })
        const { id: schemaId } = yield* schemas.insert({ ...schemaRow(type.id), checksum: "sha256:documents" })
        const row = {
          name: "doc",
          data: "v1.x",
          is_anonymous: false,
          block_type_name: type.name,
          block_type_id: type.id,
          block_schema_id: schemaId
        }
        const missingSchema = yield* Effect.flip(documents.insert({ ...row, block_schema_id: MISSING }))
        expect(missingSchema._tag).toBe("BlockDocumentConflict")
        const id = yield* documents.insert(row)
        expect((yield* Effect.flip(documents.insert(row)))._tag).toBe("BlockDocumentNameTaken")
        const missingReference = yield* Effect.flip(documents.addReferences(id, [{ name: "x", id: MISSING }]))
        expect(missingReference._tag).toBe("BlockDocumentConflict")
        const missingNewSchema = yield* Effect.flip(documents.update(id, { block_schema_id: MISSING }))
        expect(missingNewSchema._tag).toBe("BlockDocumentConflict")
      })
    )
  })
})
