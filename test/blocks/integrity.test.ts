import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BlockDocumentsRepo } from "../../src/blocks/documents-repo.ts"
import { BlockSchemasRepo } from "../../src/blocks/schemas-repo.ts"
import { BlockTypesRepo } from "../../src/blocks/types-repo.ts"
import { Deployment } from "../../src/deployments/schemas.ts"
import { FlowRun } from "../../src/flow-runs/schemas.ts"
import { idOf, makeFlow, ok, okAs } from "../support/api.ts"
import { createDocument, makeBlock, makeDocument } from "../support/blocks.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"
const HIDDEN = "********"

const read = (path: string) => Effect.map(request("GET", path), (res) => ok(res, 200))
const patch = (id: string, body: Record<string, unknown>) => request("PATCH", `/block_documents/${id}`, { body })

/** The document aws (key secret, region eu) of the type credentials-<suffix>, and my-bucket of bucket-<suffix> referencing it. */
const bucketOfCredentials = (suffix: string) =>
  Effect.gen(function* () {
    const credentials = yield* makeBlock(`credentials-${suffix}`, ["key"])
    const bucket = yield* makeBlock(`bucket-${suffix}`)
    const child = yield* makeDocument(credentials, "aws", { key: "s3cr3t", region: "eu" })
    const parent = ok(yield* createDocument(bucket, { name: "my-bucket", data: { bucket: "b", credentials: { $ref: { block_document_id: child.id } } } }), 201)
    return { bucket, child, parent, parentId: idOf(parent) }
  })

const schemaRow = (block_type_id: string) => ({
  checksum: "sha256:integrity",
  fields: { title: "Integrity" },
  capabilities: [],
  version: "1",
  block_type_id
})

// The writes whose constraint violations have a meaning fail with the area's errors, not a defect.
describe("what block documents are linked to, and integrity violations", () => {
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

    describe("documents that reference documents", () => {
      it.effect("resolve the referenced document into their data, secrets obfuscated unless include_secrets", () =>
        Effect.gen(function* () {
          const { child, parent } = yield* bucketOfCredentials("resolved")
          expect(parent.data).toEqual({ bucket: "b", credentials: { key: HIDDEN, region: "eu" } })
          expect(parent.block_document_references.credentials.block_document).toMatchObject({ id: child.id, name: "aws", is_anonymous: false, block_document_references: {} })
          expect(parent.block_document_references.credentials.block_document.block_type.slug).toBe("credentials-resolved")
          expect((yield* read(`/block_documents/${parent.id}?include_secrets=true`)).data.credentials).toEqual({ key: "s3cr3t", region: "eu" })
        }))

      it.effect("show the referenced document's own changes", () =>
        Effect.gen(function* () {
          const { child, parent } = yield* bucketOfCredentials("changed")
          yield* patch(child.id, { data: { region: "us" } })
          expect((yield* read(`/block_documents/${parent.id}`)).data.credentials).toEqual({ key: HIDDEN, region: "us" })
        }))

      it.effect("keep the referenced document from being deleted (409, naming them)", () =>
        Effect.gen(function* () {
          const { child } = yield* bucketOfCredentials("guarded")
          const refused = yield* request("DELETE", `/block_documents/${child.id}`)
          expect(refused.status).toBe(409)
          expect(refused.body.detail).toContain("my-bucket")
        }))

      it.effect("refuse a reference without an id (400), to a document that does not exist (409), and a cycle (400)", () =>
        Effect.gen(function* () {
          const { bucket, child, parentId } = yield* bucketOfCredentials("refused")
          const badRef = yield* createDocument(bucket, { name: "bad", data: { x: { $ref: {} } } })
          expect(badRef.status).toBe(400)
          expect(badRef.body).toEqual({ detail: "Received block reference without a block_document_id in key x" })
          expect((yield* createDocument(bucket, { name: "dangling", data: { x: { $ref: { block_document_id: MISSING } } } })).status).toBe(409)
          expect((yield* patch(child.id, { data: { loop: { $ref: { block_document_id: parentId } } } })).status).toBe(400)
        }))

      it.effect("merging keeps a reference the update does not mention; null drops it; a new reference takes it back", () =>
        Effect.gen(function* () {
          const { child, parentId } = yield* bucketOfCredentials("merged")
          expect((yield* patch(parentId, { data: { bucket: "d" } })).status).toBe(204)
          const merged = yield* read(`/block_documents/${parentId}`)
          expect(merged.data).toEqual({ bucket: "d", credentials: { key: HIDDEN, region: "eu" } })
          expect(Object.keys(merged.block_document_references)).toEqual(["credentials"])
          yield* patch(parentId, { data: { credentials: null } })
          expect(yield* read(`/block_documents/${parentId}`)).toMatchObject({ data: { bucket: "d", credentials: null }, block_document_references: {} })
          yield* patch(parentId, { data: { credentials: { $ref: { block_document_id: child.id } } } })
          expect((yield* read(`/block_documents/${parentId}`)).data.credentials).toEqual({ key: HIDDEN, region: "eu" })
        }))

      it.effect("replacing the data without the reference drops it; the referenced document can then be deleted, once", () =>
        Effect.gen(function* () {
          const { child, parentId } = yield* bucketOfCredentials("replaced")
          expect((yield* patch(parentId, { data: { bucket: "c" }, merge_existing_data: false })).status).toBe(204)
          const unlinked = yield* read(`/block_documents/${parentId}`)
          expect(unlinked.data).toEqual({ bucket: "c" })
          expect(unlinked.block_document_references).toEqual({})
          expect((yield* request("DELETE", `/block_documents/${child.id}`)).status).toBe(204)
          expect((yield* request("GET", `/block_documents/${child.id}`)).status).toBe(404)
          expect((yield* request("DELETE", `/block_documents/${child.id}`)).status).toBe(404)
        }))
    })

    describe("deployments and flow runs that name documents", () => {
      it.effect("may name only stored documents (409)", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("linked-flow")
          const dangling = yield* request("POST", "/deployments/", { body: { name: "d0", flow_id: flowId, storage_document_id: MISSING } })
          expect(dangling.status).toBe(409)
          expect(dangling.body.detail).toContain(`Error creating deployment. Could not find storage block with id: ${MISSING}.`)
          expect((yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, infrastructure_document_id: MISSING } })).status).toBe(409)
        }))

      it.effect("lose the link when the document is deleted", () =>
        Effect.gen(function* () {
          const block = yield* makeBlock("infra")
          const storage = yield* makeDocument(block, "storage", {})
          const infrastructure = yield* makeDocument(block, "infrastructure", {})
          const flowId = yield* makeFlow("unlinked-flow")
          const deployment = okAs(Deployment, yield* request("POST", "/deployments/", {
            body: { name: "d1", flow_id: flowId, storage_document_id: storage.id, infrastructure_document_id: infrastructure.id }
          }), 201)
          const run = okAs(FlowRun, yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, infrastructure_document_id: infrastructure.id } }), 201)
          expect((yield* request("DELETE", `/block_documents/${storage.id}`)).status).toBe(204)
          expect((yield* request("DELETE", `/block_documents/${infrastructure.id}`)).status).toBe(204)
          expect(yield* read(`/deployments/${deployment.id}`)).toMatchObject({ storage_document_id: null, infrastructure_document_id: null })
          expect((yield* read(`/flow_runs/${run.id}`)).infrastructure_document_id).toBeNull()
        }))
    })
  })
})
