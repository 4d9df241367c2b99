import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import { makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"
const HIDDEN = "********"

/** A block type with one schema whose secret fields are `secrets`. */
const makeBlock = (slug: string, secrets: Array<string> = [], capabilities: Array<string> = []) =>
  Effect.gen(function* () {
    const type = ok(yield* request("POST", "/block_types/", { body: { name: `Type ${slug}`, slug } }), 201)
    const schema = ok(
      yield* request("POST", "/block_schemas/", {
        body: {
          block_type_id: type.id,
          capabilities,
          fields: { title: slug, type: "object", properties: {}, block_type_slug: slug, secret_fields: secrets, block_schema_references: {} }
        }
      }),
      201
    )
    return { type, schema }
  })

type Block = { type: any; schema: any }

const createDocument = (block: Block, body: Record<string, unknown>) =>
  request("POST", "/block_documents/", { body: { block_type_id: block.type.id, block_schema_id: block.schema.id, ...body } })

const makeDocument = (block: Block, name: string, data: Record<string, unknown>) =>
  Effect.map(createDocument(block, { name, data }), (res) => ok(res, 201))

const names = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/block_documents/filter", { body }), (res) => ok(res, 200).map((d: any) => d.name))

const SECRET_DATA = {
  user: "ada",
  password: "hunter2",
  nested: { token: "t0k3n", plain: "visible" },
  headers: { Authorization: "Bearer abc", deep: { x: "y" } },
  unset: null
}
const OBFUSCATED_DATA = {
  user: "ada",
  password: HIDDEN,
  nested: { token: HIDDEN, plain: "visible" },
  headers: { Authorization: HIDDEN, deep: { x: HIDDEN } },
  unset: null
}

describe("block documents", () => {
  // A small page size, to see which listings page and which do not.
  it.layer(testServer({ overrides: { "server.api.default_limit": 5 } }), { timeout: 60_000 })((it) => {
    it.effect("creates documents (201) with their schema and type; names are unique per type and validated", () =>
      Effect.gen(function* () {
        const block = yield* makeBlock("plain")
        const created = yield* createDocument(block, { name: "first", data: { a: 1, b: [1, 2], c: { d: null } } })
        expect(created.status).toBe(201)
        expect(created.body).toMatchObject({
          name: "first",
          data: { a: 1, b: [1, 2], c: { d: null } },
          block_schema_id: block.schema.id,
          block_type_id: block.type.id,
          block_type_name: "Type plain",
          block_document_references: {},
          is_anonymous: false
        })
        expect(created.body.block_schema).toMatchObject({ id: block.schema.id, checksum: block.schema.checksum })
        expect(created.body.block_type).toMatchObject({ id: block.type.id, slug: "plain" })
        expect(ok(yield* request("GET", `/block_documents/${created.body.id}`), 200)).toEqual(created.body)

        const taken = yield* createDocument(block, { name: "first", data: {} })
        expect(taken.status).toBe(409)
        expect(taken.body).toEqual({ detail: "Block already exists" })
        const other = yield* makeBlock("other")
        expect((yield* createDocument(other, { name: "first", data: {} })).status).toBe(201)

        expect((yield* createDocument(block, { name: "with-dashes-123" })).status).toBe(201)
        for (const name of ["my/block", "my%block", "MyBlock", "my block"]) {
          expect((yield* createDocument(block, { name })).status, name).toBe(422)
        }
        expect((yield* createDocument(block, { name: "Upper" })).body.detail[0].msg).toBe(
          "Value error, Block document name must only contain lowercase letters, numbers, and dashes."
        )
        const nameless = yield* createDocument(block, { data: {} })
        expect(nameless.status).toBe(422)
        expect(nameless.body.detail[0]).toMatchObject({ loc: ["body"], msg: "Value error, Names must be provided for block documents." })
        expect((yield* createDocument(block, { name: "x", unknown: 1 })).status).toBe(422)
        // A schema that does not exist is an integrity conflict; one of another type is refused.
        expect((yield* request("POST", "/block_documents/", { body: { name: "y", block_type_id: block.type.id, block_schema_id: MISSING } })).status).toBe(409)
        expect(
          (yield* request("POST", "/block_documents/", {
            body: { name: "y", block_type_id: block.type.id, block_schema_id: other.schema.id }
          })).status
        ).toBe(422)
        expect((yield* request("GET", `/block_documents/${MISSING}`)).body).toEqual({ detail: "Block document not found" })
        expect((yield* request("GET", "/block_documents/not-a-uuid")).status).toBe(404)
      })
    )

    it.effect("anonymous documents get generated names and are left out of listings unless asked for", () =>
      Effect.gen(function* () {
        const block = yield* makeBlock("anon")
        const first = ok(yield* createDocument(block, { is_anonymous: true, data: { a: 1 } }), 201)
        const second = ok(yield* createDocument(block, { is_anonymous: true, data: { a: 2 } }), 201)
        expect(first.name).toMatch(/^anonymous-[0-9a-f-]{36}$/)
        expect(second.name).not.toBe(first.name)
        expect(first.is_anonymous).toBe(true)
        const named = ok(yield* createDocument(block, { name: "named", is_anonymous: true }), 201)
        expect(named.name).toBe("named")
        yield* makeDocument(block, "visible", {})

        const scope = { block_type_id: { any_: [block.type.id] } }
        expect(yield* names({ block_documents: scope })).toEqual(["visible"])
        expect(yield* names({ block_types: { slug: { any_: ["anon"] } } })).toEqual(["visible"])
        expect(yield* names({ block_documents: { ...scope, is_anonymous: { eq_: true } } })).toEqual(
          [first.name, second.name, "named"].sort()
        )
        expect((yield* names({ block_documents: { ...scope, is_anonymous: null } })).length).toBe(4)
        expect((yield* request("POST", "/block_documents/count", { body: { block_documents: scope } })).body).toBe(1)
        expect(ok(yield* request("GET", "/block_types/slug/anon/block_documents"), 200).map((d: any) => d.name)).toEqual(["visible"])
        // By name, an anonymous document is found too.
        expect(ok(yield* request("GET", `/block_types/slug/anon/block_documents/name/${first.name}`), 200).id).toBe(first.id)
      })
    )

    it.effect("filters by type, schema capabilities and name, sorts and pages", () =>
      Effect.gen(function* () {
        const alpha = yield* makeBlock("alpha", [], ["fly"])
        yield* TestClock.adjust("1 second")
        const beta = yield* makeBlock("beta", [], ["run"])
        yield* makeDocument(beta, "b-one", {})
        yield* makeDocument(alpha, "a-two", {})
        yield* makeDocument(alpha, "c-three", {})
        const scope = { block_types: { slug: { any_: ["alpha", "beta"] } } }
        expect(yield* names(scope)).toEqual(["a-two", "b-one", "c-three"])
        expect(yield* names({ ...scope, sort: "NAME_DESC" })).toEqual(["c-three", "b-one", "a-two"])
        expect(yield* names({ ...scope, sort: "BLOCK_TYPE_AND_NAME_ASC" })).toEqual(["a-two", "c-three", "b-one"])
        expect(yield* names({ ...scope, limit: 1, offset: 1 })).toEqual(["b-one"])
        expect(yield* names({ block_types: { slug: { any_: ["beta"] } } })).toEqual(["b-one"])
        expect(yield* names({ ...scope, block_schemas: { block_capabilities: { all_: ["fly"] } } })).toEqual(["a-two", "c-three"])
        expect(yield* names({ ...scope, block_documents: { name: { like_: "t" } } })).toEqual(["a-two", "c-three"])
        expect(yield* names({ ...scope, block_documents: { name: { any_: ["b-one"] } } })).toEqual(["b-one"])
        expect((yield* request("POST", "/block_documents/count", { body: scope })).body).toBe(3)
        expect((yield* request("POST", "/block_documents/filter", { body: { sort: "OLDEST" } })).status).toBe(422)
        expect((yield* request("POST", "/block_documents/filter", { body: { block_documents: { nope: 1 } } })).status).toBe(422)
        // The slug listing has every document of the type; /filter pages by the default limit.
        for (let i = 0; i < 4; i++) yield* makeDocument(alpha, `more-${i}`, {})
        expect((yield* request("GET", "/block_types/slug/alpha/block_documents")).body).toHaveLength(6)
        expect(yield* names({ block_types: { slug: { any_: ["alpha"] } } })).toHaveLength(5)
        expect((yield* request("GET", "/block_types/slug/nonsense/block_documents")).body).toEqual({ detail: "Block type not found" })
        expect((yield* request("GET", "/block_types/slug/alpha/block_documents/name/nope")).body).toEqual({
          detail: "Block document not found"
        })
        expect((yield* request("GET", "/block_types/slug/nonsense/block_documents/name/a-two")).status).toBe(404)
      })
    )

    it.effect("obfuscates secret fields (nested and wildcard) on every path unless include_secrets", () =>
      Effect.gen(function* () {
        const block = yield* makeBlock("vault", ["password", "nested.token", "headers.*", "unset"])
        const created = ok(yield* createDocument(block, { name: "creds", data: SECRET_DATA }), 201)
        expect(created.data).toEqual(OBFUSCATED_DATA)
        const id = created.id

        const byId = ok(yield* request("GET", `/block_documents/${id}`), 200)
        expect(byId.data).toEqual(OBFUSCATED_DATA)
        expect(ok(yield* request("GET", `/block_documents/${id}?include_secrets=true`), 200).data).toEqual(SECRET_DATA)
        expect(ok(yield* request("GET", `/block_documents/${id}?include_secrets=false`), 200).data).toEqual(OBFUSCATED_DATA)
        expect((yield* request("GET", `/block_documents/${id}?include_secrets=maybe`)).status).toBe(422)

        const listed = (body: Record<string, unknown>) =>
          Effect.map(request("POST", "/block_documents/filter", { body: { block_types: { slug: { any_: ["vault"] } }, ...body } }), (res) =>
            ok(res, 200)[0].data
          )
        expect(yield* listed({})).toEqual(OBFUSCATED_DATA)
        expect(yield* listed({ include_secrets: true })).toEqual(SECRET_DATA)

        expect(ok(yield* request("GET", "/block_types/slug/vault/block_documents"), 200)[0].data).toEqual(OBFUSCATED_DATA)
        expect(ok(yield* request("GET", "/block_types/slug/vault/block_documents?include_secrets=true"), 200)[0].data).toEqual(SECRET_DATA)
        expect(ok(yield* request("GET", "/block_types/slug/vault/block_documents/name/creds"), 200).data).toEqual(OBFUSCATED_DATA)
        expect(ok(yield* request("GET", "/block_types/slug/vault/block_documents/name/creds?include_secrets=1"), 200).data).toEqual(
          SECRET_DATA
        )

        // Sending back what a read showed keeps every secret; a new value replaces one.
        expect((yield* request("PATCH", `/block_documents/${id}`, { body: { data: byId.data } })).status).toBe(204)
        expect(ok(yield* request("GET", `/block_documents/${id}?include_secrets=true`), 200).data).toEqual(SECRET_DATA)
        const changed = { ...byId.data, password: "correct horse", headers: { Authorization: HIDDEN, deep: { x: "z" } } }
        expect((yield* request("PATCH", `/block_documents/${id}`, { body: { data: changed, merge_existing_data: false } })).status).toBe(204)
        expect(ok(yield* request("GET", `/block_documents/${id}?include_secrets=true`), 200).data).toEqual({
          ...SECRET_DATA,
          password: "correct horse",
          headers: { Authorization: "Bearer abc", deep: { x: "z" } }
        })
      })
    )

    it.effect("keeps data encrypted at rest with a key the server generated", () =>
      Effect.gen(function* () {
        const block = yield* makeBlock("at-rest", ["password"])
        const document = yield* makeDocument(block, "stored", { password: "plaintext-secret-value", user: "visible-user-name" })
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ data: string }>`SELECT data FROM block_document WHERE id = ${document.id}`
        expect(rows).toHaveLength(1)
        expect(rows[0]!.data).toMatch(/^v1\./)
        expect(rows[0]!.data).not.toContain("plaintext-secret-value")
        expect(rows[0]!.data).not.toContain("visible-user-name")
        const everything = yield* sql<{ dump: string }>`SELECT (SELECT json_agg(d)::text FROM block_document d) AS dump`
        expect(everything[0]!.dump).not.toContain("plaintext-secret-value")
        const keys = yield* sql<{ value: any }>`SELECT value FROM configuration WHERE key = 'ENCRYPTION_KEY'`
        expect(Buffer.from(keys[0]!.value.aes_256_gcm_key, "base64")).toHaveLength(32)
        // Two documents with the same data are sealed differently.
        const twin = yield* makeDocument(block, "twin", { password: "plaintext-secret-value", user: "visible-user-name" })
        const sealed = yield* sql<{ data: string }>`SELECT data FROM block_document WHERE id IN (${document.id}, ${twin.id})`
        expect(new Set(sealed.map((r) => r.data)).size).toBe(2)
      })
    )

    it.effect("resolves referenced documents into data, keeps references in step on update, and guards deletes", () =>
      Effect.gen(function* () {
        const credentials = yield* makeBlock("credentials", ["key"])
        const bucket = yield* makeBlock("bucket")
        const child = yield* makeDocument(credentials, "aws", { key: "s3cr3t", region: "eu" })
        const parentRes = yield* createDocument(bucket, {
          name: "my-bucket",
          data: { bucket: "b", credentials: { $ref: { block_document_id: child.id } } }
        })
        expect(parentRes.status).toBe(201)
        const parent = parentRes.body
        expect(parent.data).toEqual({ bucket: "b", credentials: { key: HIDDEN, region: "eu" } })
        expect(parent.block_document_references.credentials.block_document).toMatchObject({
          id: child.id,
          name: "aws",
          is_anonymous: false,
          block_document_references: {}
        })
        expect(parent.block_document_references.credentials.block_document.block_type.slug).toBe("credentials")
        const withSecrets = ok(yield* request("GET", `/block_documents/${parent.id}?include_secrets=true`), 200)
        expect(withSecrets.data.credentials).toEqual({ key: "s3cr3t", region: "eu" })
        // The child's own changes show through the parent.
        yield* request("PATCH", `/block_documents/${child.id}`, { body: { data: { region: "us" } } })
        expect(ok(yield* request("GET", `/block_documents/${parent.id}`), 200).data.credentials).toEqual({ key: HIDDEN, region: "us" })

        // A referenced document cannot be deleted while referenced.
        const refused = yield* request("DELETE", `/block_documents/${child.id}`)
        expect(refused.status).toBe(409)
        expect(refused.body.detail).toContain("my-bucket")

        const badRef = yield* createDocument(bucket, { name: "bad", data: { x: { $ref: {} } } })
        expect(badRef.status).toBe(400)
        expect(badRef.body).toEqual({ detail: "Received block reference without a block_document_id in key x" })
        expect((yield* createDocument(bucket, { name: "dangling", data: { x: { $ref: { block_document_id: MISSING } } } })).status).toBe(409)
        const cycle = yield* request("PATCH", `/block_documents/${child.id}`, {
          body: { data: { loop: { $ref: { block_document_id: parent.id } } } }
        })
        expect(cycle.status).toBe(400)

        // Merging keeps a reference the update does not mention; null drops it.
        expect((yield* request("PATCH", `/block_documents/${parent.id}`, { body: { data: { bucket: "d" } } })).status).toBe(204)
        const merged = ok(yield* request("GET", `/block_documents/${parent.id}`), 200)
        expect(merged.data).toEqual({ bucket: "d", credentials: { key: HIDDEN, region: "us" } })
        expect(Object.keys(merged.block_document_references)).toEqual(["credentials"])
        yield* request("PATCH", `/block_documents/${parent.id}`, { body: { data: { credentials: null } } })
        expect(ok(yield* request("GET", `/block_documents/${parent.id}`), 200)).toMatchObject({
          data: { bucket: "d", credentials: null },
          block_document_references: {}
        })
        yield* request("PATCH", `/block_documents/${parent.id}`, {
          body: { data: { credentials: { $ref: { block_document_id: child.id } } } }
        })
        expect(ok(yield* request("GET", `/block_documents/${parent.id}`), 200).data.credentials).toEqual({ key: HIDDEN, region: "us" })

        // Replacing the data without the reference drops it; the child can then go.
        expect(
          (yield* request("PATCH", `/block_documents/${parent.id}`, { body: { data: { bucket: "c" }, merge_existing_data: false } })).status
        ).toBe(204)
        const unlinked = ok(yield* request("GET", `/block_documents/${parent.id}`), 200)
        expect(unlinked.data).toEqual({ bucket: "c" })
        expect(unlinked.block_document_references).toEqual({})
        expect((yield* request("DELETE", `/block_documents/${child.id}`)).status).toBe(204)
        expect((yield* request("GET", `/block_documents/${child.id}`)).status).toBe(404)
        expect((yield* request("DELETE", `/block_documents/${child.id}`)).status).toBe(404)
      })
    )

    it.effect("PATCH merges by default, replaces without merging, moves between schemas of one type", () =>
      Effect.gen(function* () {
        const block = yield* makeBlock("mergeable")
        const document = yield* makeDocument(block, "doc", { a: 1, b: 2 })
        expect((yield* request("PATCH", `/block_documents/${document.id}`, { body: { data: { b: 3, c: 4 } } })).status).toBe(204)
        expect(ok(yield* request("GET", `/block_documents/${document.id}`), 200).data).toEqual({ a: 1, b: 3, c: 4 })
        yield* request("PATCH", `/block_documents/${document.id}`, { body: { data: { z: 0 }, merge_existing_data: false } })
        expect(ok(yield* request("GET", `/block_documents/${document.id}`), 200).data).toEqual({ z: 0 })

        const newer = ok(
          yield* request("POST", "/block_schemas/", { body: { block_type_id: block.type.id, fields: { title: "v2" }, version: "2" } }),
          201
        )
        yield* request("PATCH", `/block_documents/${document.id}`, { body: { data: {}, block_schema_id: newer.id } })
        expect(ok(yield* request("GET", `/block_documents/${document.id}`), 200).block_schema_id).toBe(newer.id)
        const foreign = yield* makeBlock("foreign")
        const moved = yield* request("PATCH", `/block_documents/${document.id}`, { body: { data: {}, block_schema_id: foreign.schema.id } })
        expect(moved.status).toBe(400)
        expect(moved.body).toEqual({ detail: "Must migrate block document to a block schema of the same block type." })
        expect((yield* request("PATCH", `/block_documents/${MISSING}`, { body: { data: {} } })).status).toBe(404)
        expect((yield* request("PATCH", `/block_documents/${document.id}`, { body: { name: "renamed" } })).status).toBe(422)
      })
    )

    it.effect("deleting a type or schema deletes its documents; the default result storage follows its document", () =>
      Effect.gen(function* () {
        expect(ok(yield* request("GET", "/admin/storage"), 200)).toEqual({ default_result_storage_block_id: null })
        const storage = yield* makeBlock("storage", [], ["read-path", "write-path"])
        const document = yield* makeDocument(storage, "results", { basepath: "/tmp" })
        const put = yield* request("PUT", "/admin/storage", { body: { default_result_storage_block_id: document.id } })
        expect(put.status).toBe(200)
        expect(put.body).toEqual({ default_result_storage_block_id: document.id })
        expect(ok(yield* request("GET", "/admin/storage"), 200)).toEqual({ default_result_storage_block_id: document.id })

        const notStorage = yield* makeBlock("not-storage")
        const plain = yield* makeDocument(notStorage, "plain", {})
        const refused = yield* request("PUT", "/admin/storage", { body: { default_result_storage_block_id: plain.id } })
        expect(refused.status).toBe(422)
        expect(refused.body).toEqual({ detail: `Block document ${plain.id} cannot be used for result storage.` })
        const missing = yield* request("PUT", "/admin/storage", { body: { default_result_storage_block_id: MISSING } })
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual({ detail: `Block document ${MISSING} not found.` })
        expect((yield* request("PUT", "/admin/storage", { body: {} })).status).toBe(422)

        // Deleting another schema's documents leaves the setting; deleting the storage type clears it.
        expect((yield* request("DELETE", `/block_types/${notStorage.type.id}`)).status).toBe(204)
        expect((yield* request("GET", `/block_documents/${plain.id}`)).status).toBe(404)
        expect(ok(yield* request("GET", "/admin/storage"), 200).default_result_storage_block_id).toBe(document.id)
        expect((yield* request("DELETE", `/block_schemas/${storage.schema.id}`)).status).toBe(204)
        expect((yield* request("GET", `/block_documents/${document.id}`)).status).toBe(404)
        expect(ok(yield* request("GET", "/admin/storage"), 200)).toEqual({ default_result_storage_block_id: null })

        const again = yield* makeBlock("storage-two", [], ["write-path"])
        const other = yield* makeDocument(again, "results-two", {})
        ok(yield* request("PUT", "/admin/storage", { body: { default_result_storage_block_id: other.id } }), 200)
        expect((yield* request("DELETE", "/admin/storage")).status).toBe(204)
        expect((yield* request("DELETE", "/admin/storage")).status).toBe(204)
        expect(ok(yield* request("GET", "/admin/storage"), 200)).toEqual({ default_result_storage_block_id: null })
        ok(yield* request("PUT", "/admin/storage", { body: { default_result_storage_block_id: other.id } }), 200)
        expect((yield* request("DELETE", `/block_documents/${other.id}`)).status).toBe(204)
        expect(ok(yield* request("GET", "/admin/storage"), 200)).toEqual({ default_result_storage_block_id: null })
      })
    )

    it.effect("deployments and flow runs may only name stored documents, and lose the link when one is deleted", () =>
      Effect.gen(function* () {
        const block = yield* makeBlock("infra")
        const storage = yield* makeDocument(block, "storage", {})
        const infrastructure = yield* makeDocument(block, "infrastructure", {})
        const flowId = yield* makeFlow("linked-flow")
        const dangling = yield* request("POST", "/deployments/", { body: { name: "d0", flow_id: flowId, storage_document_id: MISSING } })
        expect(dangling.status).toBe(409)
        expect(dangling.body.detail).toContain(`Error creating deployment. Could not find storage block with id: ${MISSING}.`)
        const deployment = ok(
          yield* request("POST", "/deployments/", {
            body: { name: "d1", flow_id: flowId, storage_document_id: storage.id, infrastructure_document_id: infrastructure.id }
          }),
          201
        )
        const badRun = yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, infrastructure_document_id: MISSING } })
        expect(badRun.status).toBe(409)
        const run = ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, infrastructure_document_id: infrastructure.id } }), 201)

        expect((yield* request("DELETE", `/block_documents/${storage.id}`)).status).toBe(204)
        expect((yield* request("DELETE", `/block_documents/${infrastructure.id}`)).status).toBe(204)
        expect(ok(yield* request("GET", `/deployments/${deployment.id}`), 200)).toMatchObject({
          storage_document_id: null,
          infrastructure_document_id: null
        })
        expect(ok(yield* request("GET", `/flow_runs/${run.id}`), 200).infrastructure_document_id).toBeNull()
      })
    )
  })
})
