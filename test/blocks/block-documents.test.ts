import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import { BlockSchema } from "../../src/blocks/schemas.ts"
import { ok, okAs, once } from "../support/api.ts"
import { createDocument, makeBlock, makeDocument } from "../support/blocks.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"
const HIDDEN = "********"

const names = (body: Record<string, unknown>) => Effect.map(request("POST", "/block_documents/filter", { body }), (res) => ok(res, 200).map((d) => d.name))
const read = (path: string) => Effect.map(request("GET", path), (res) => ok(res, 200))
const patchDocument = (id: string, body: Record<string, unknown>) => request("PATCH", `/block_documents/${id}`, { body })
const storageSetting = read("/admin/storage")
const setStorage = (body: Record<string, unknown>) => request("PUT", "/admin/storage", { body })

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
const SECRETS = ["password", "nested.token", "headers.*", "unset"]

/** The document creds of the type vault, holding SECRET_DATA; read only. */
const vault = once(Effect.flatMap(makeBlock("vault", SECRETS), (block) => makeDocument(block, "creds", SECRET_DATA)))
const listedData = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/block_documents/filter", { body: { block_types: { slug: { any_: ["vault"] } }, ...body } }), (res) => ok(res, 200)[0].data)

/** Types alpha (fly) and, a second later, beta (run); documents b-one (beta), a-two and c-three (alpha); read only. */
const filterSet = once(
  Effect.gen(function* () {
    const alpha = yield* makeBlock("alpha", [], ["fly"])
    yield* TestClock.adjust("1 second")
    const beta = yield* makeBlock("beta", [], ["run"])
    yield* makeDocument(beta, "b-one", {})
    yield* makeDocument(alpha, "a-two", {})
    yield* makeDocument(alpha, "c-three", {})
    return { block_types: { slug: { any_: ["alpha", "beta"] } } }
  })
)

/** Two anonymous documents, one anonymous with a name, and one named: of the type <slug>. */
const anonymous = (slug: string) =>
  Effect.gen(function* () {
    const block = yield* makeBlock(slug)
    const first = ok(yield* createDocument(block, { is_anonymous: true, data: { a: 1 } }), 201)
    const second = ok(yield* createDocument(block, { is_anonymous: true, data: { a: 2 } }), 201)
    const named = ok(yield* createDocument(block, { name: "named", is_anonymous: true }), 201)
    yield* makeDocument(block, "visible", {})
    return { block, first, second, named, scope: { block_type_id: { any_: [block.type.id] } } }
  })

describe("block documents", () => {
  // A small page size, to see which listings page and which do not.
  it.layer(testServer({ overrides: { "server.api.default_limit": 5 } }), { timeout: 60_000 })((it) => {
    describe("create and read", () => {
      it.effect("creates a document (201) with its schema and type, and reads it back", () =>
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
          expect(yield* read(`/block_documents/${created.body.id}`)).toEqual(created.body)
        }))

      it.effect("names are unique per type (409), not across types", () =>
        Effect.gen(function* () {
          const block = yield* makeBlock("unique")
          yield* makeDocument(block, "first", {})
          const taken = yield* createDocument(block, { name: "first", data: {} })
          expect(taken.status).toBe(409)
          expect(taken.body).toEqual({ detail: "Block already exists" })
          expect((yield* createDocument(yield* makeBlock("other"), { name: "first", data: {} })).status).toBe(201)
        }))

      it.effect("names hold lowercase letters, numbers and dashes only (422 otherwise)", () =>
        Effect.gen(function* () {
          const block = yield* makeBlock("named")
          expect((yield* createDocument(block, { name: "with-dashes-123" })).status).toBe(201)
          for (const name of ["my/block", "my%block", "MyBlock", "my block"]) expect((yield* createDocument(block, { name })).status, name).toBe(422)
          expect((yield* createDocument(block, { name: "Upper" })).body.detail[0].msg).toBe(
            "Value error, Block document name must only contain lowercase letters, numbers, and dashes."
          )
        }))

      it.effect("refuse a document without a name that is not anonymous, and a field there is not (422)", () =>
        Effect.gen(function* () {
          const block = yield* makeBlock("nameless")
          const nameless = yield* createDocument(block, { data: {} })
          expect(nameless.status).toBe(422)
          expect(nameless.body.detail[0]).toMatchObject({ loc: ["body"], msg: "Value error, Names must be provided for block documents." })
          expect((yield* createDocument(block, { name: "x", unknown: 1 })).status).toBe(422)
        }))

      it.effect("a schema that does not exist is an integrity conflict (409); one of another type is refused (422)", () =>
        Effect.gen(function* () {
          const block = yield* makeBlock("schemed")
          const other = yield* makeBlock("other-schemed")
          expect((yield* request("POST", "/block_documents/", { body: { name: "y", block_type_id: block.type.id, block_schema_id: MISSING } })).status).toBe(409)
          expect((yield* request("POST", "/block_documents/", { body: { name: "y", block_type_id: block.type.id, block_schema_id: other.schema.id } })).status).toBe(422)
        }))

      it.effect("an unknown id, or one that is not a UUID, is 404", () =>
        Effect.gen(function* () {
          expect((yield* request("GET", `/block_documents/${MISSING}`)).body).toEqual({ detail: "Block document not found" })
          expect((yield* request("GET", "/block_documents/not-a-uuid")).status).toBe(404)
        }))
    })

    describe("anonymous documents", () => {
      it.effect("get generated names, each its own; a name given is kept", () =>
        Effect.gen(function* () {
          const { first, second, named } = yield* anonymous("anon")
          expect(first.name).toMatch(/^anonymous-[0-9a-f-]{36}$/)
          expect(second.name).not.toBe(first.name)
          expect(first.is_anonymous).toBe(true)
          expect(named.name).toBe("named")
        }))

      it.effect("are left out of listings and counts unless asked for", () =>
        Effect.gen(function* () {
          const { first, second, scope } = yield* anonymous("anon-listed")
          expect(yield* names({ block_documents: scope })).toEqual(["visible"])
          expect(yield* names({ block_types: { slug: { any_: ["anon-listed"] } } })).toEqual(["visible"])
          expect(yield* names({ block_documents: { ...scope, is_anonymous: { eq_: true } } })).toEqual([first.name, second.name, "named"].sort())
          expect((yield* names({ block_documents: { ...scope, is_anonymous: null } })).length).toBe(4)
          expect((yield* request("POST", "/block_documents/count", { body: { block_documents: scope } })).body).toBe(1)
          expect((yield* read("/block_types/slug/anon-listed/block_documents")).map((d) => d.name)).toEqual(["visible"])
        }))

      it.effect("are found by name", () =>
        Effect.gen(function* () {
          const { first } = yield* anonymous("anon-found")
          expect((yield* read(`/block_types/slug/anon-found/block_documents/name/${first.name}`)).id).toBe(first.id)
        }))
    })

    describe("filter, count and list", () => {
      const filters: Array<readonly [string, Record<string, unknown>, Array<string>]> = [
        ["by type, sorted by name", {}, ["a-two", "b-one", "c-three"]],
        ["sorted by name descending", { sort: "NAME_DESC" }, ["c-three", "b-one", "a-two"]],
        ["sorted by type, then name", { sort: "BLOCK_TYPE_AND_NAME_ASC" }, ["a-two", "c-three", "b-one"]],
        ["paged", { limit: 1, offset: 1 }, ["b-one"]],
        ["by one type", { block_types: { slug: { any_: ["beta"] } } }, ["b-one"]],
        ["by their schema's capabilities", { block_schemas: { block_capabilities: { all_: ["fly"] } } }, ["a-two", "c-three"]],
        ["by a name like", { block_documents: { name: { like_: "t" } } }, ["a-two", "c-three"]],
        ["by name", { block_documents: { name: { any_: ["b-one"] } } }, ["b-one"]]
      ]
      for (const [title, body, expected] of filters) {
        it.effect(`filter ${title}`, () => Effect.gen(function* () {
          expect(yield* names({ ...(yield* filterSet), ...body })).toEqual(expected)
        }))
      }

      it.effect("count the matching documents", () =>
        Effect.gen(function* () {
          expect((yield* request("POST", "/block_documents/count", { body: yield* filterSet })).body).toBe(3)
        }))

      it.effect("refuse a sort and a criterion there are not (422)", () =>
        Effect.gen(function* () {
          expect((yield* request("POST", "/block_documents/filter", { body: { sort: "OLDEST" } })).status).toBe(422)
          expect((yield* request("POST", "/block_documents/filter", { body: { block_documents: { nope: 1 } } })).status).toBe(422)
        }))

      it.effect("the slug listing has every document of the type; /filter pages by the default limit", () =>
        Effect.gen(function* () {
          const gamma = yield* makeBlock("gamma")
          for (let i = 0; i < 6; i++) yield* makeDocument(gamma, `more-${i}`, {})
          expect((yield* request("GET", "/block_types/slug/gamma/block_documents")).body).toHaveLength(6)
          expect(yield* names({ block_types: { slug: { any_: ["gamma"] } } })).toHaveLength(5)
        }))

      it.effect("the slug listing and the by-name read are 404 for an unknown type or name", () =>
        Effect.gen(function* () {
          yield* filterSet
          expect((yield* request("GET", "/block_types/slug/nonsense/block_documents")).body).toEqual({ detail: "Block type not found" })
          expect((yield* request("GET", "/block_types/slug/alpha/block_documents/name/nope")).body).toEqual({ detail: "Block document not found" })
          expect((yield* request("GET", "/block_types/slug/nonsense/block_documents/name/a-two")).status).toBe(404)
        }))
    })

    describe("secret fields (nested and wildcard)", () => {
      it.effect("are obfuscated in the created document and when read by id, unless include_secrets", () =>
        Effect.gen(function* () {
          const created = yield* vault
          expect(created.data).toEqual(OBFUSCATED_DATA)
          expect((yield* read(`/block_documents/${created.id}`)).data).toEqual(OBFUSCATED_DATA)
          expect((yield* read(`/block_documents/${created.id}?include_secrets=true`)).data).toEqual(SECRET_DATA)
          expect((yield* read(`/block_documents/${created.id}?include_secrets=false`)).data).toEqual(OBFUSCATED_DATA)
          expect((yield* request("GET", `/block_documents/${created.id}?include_secrets=maybe`)).status).toBe(422)
        }))

      it.effect("are obfuscated in /filter unless include_secrets", () =>
        Effect.gen(function* () {
          yield* vault
          expect(yield* listedData({})).toEqual(OBFUSCATED_DATA)
          expect(yield* listedData({ include_secrets: true })).toEqual(SECRET_DATA)
        }))

      it.effect("are obfuscated in the slug listing and the by-name read unless include_secrets", () =>
        Effect.gen(function* () {
          yield* vault
          expect((yield* read("/block_types/slug/vault/block_documents"))[0].data).toEqual(OBFUSCATED_DATA)
          expect((yield* read("/block_types/slug/vault/block_documents?include_secrets=true"))[0].data).toEqual(SECRET_DATA)
          expect((yield* read("/block_types/slug/vault/block_documents/name/creds")).data).toEqual(OBFUSCATED_DATA)
          expect((yield* read("/block_types/slug/vault/block_documents/name/creds?include_secrets=1")).data).toEqual(SECRET_DATA)
        }))

      it.effect("sent back as a read showed them, keep their values; a new value replaces one", () =>
        Effect.gen(function* () {
          const { id } = yield* makeDocument(yield* makeBlock("vault-patched", SECRETS), "creds", SECRET_DATA)
          const byId = yield* read(`/block_documents/${id}`)
          expect((yield* patchDocument(id, { data: byId.data })).status).toBe(204)
          expect((yield* read(`/block_documents/${id}?include_secrets=true`)).data).toEqual(SECRET_DATA)
          const shown: Record<string, unknown> = byId.data
          const changed = { ...shown, password: "correct horse", headers: { Authorization: HIDDEN, deep: { x: "z" } } }
          expect((yield* patchDocument(id, { data: changed, merge_existing_data: false })).status).toBe(204)
          expect((yield* read(`/block_documents/${id}?include_secrets=true`)).data).toEqual({
            ...SECRET_DATA,
            password: "correct horse",
            headers: { Authorization: "Bearer abc", deep: { x: "z" } }
          })
        }))
    })

    it.effect("keeps data encrypted at rest with a key the server generated, each document sealed differently", () =>
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
        const keys = yield* sql<{ value: { readonly aes_256_gcm_key: string } }>`SELECT value FROM configuration WHERE key = 'ENCRYPTION_KEY'`
        expect(Buffer.from(keys[0]!.value.aes_256_gcm_key, "base64")).toHaveLength(32)
        // Two documents with the same data are sealed differently.
        const twin = yield* makeDocument(block, "twin", { password: "plaintext-secret-value", user: "visible-user-name" })
        const sealed = yield* sql<{ data: string }>`SELECT data FROM block_document WHERE id IN (${document.id}, ${twin.id})`
        expect(new Set(sealed.map((r) => r.data)).size).toBe(2)
      }))

    describe("PATCH", () => {
      it.effect("merges the data by default", () =>
        Effect.gen(function* () {
          const document = yield* makeDocument(yield* makeBlock("mergeable"), "doc", { a: 1, b: 2 })
          expect((yield* patchDocument(document.id, { data: { b: 3, c: 4 } })).status).toBe(204)
          expect((yield* read(`/block_documents/${document.id}`)).data).toEqual({ a: 1, b: 3, c: 4 })
        }))

      it.effect("replaces the data without merge_existing_data", () =>
        Effect.gen(function* () {
          const document = yield* makeDocument(yield* makeBlock("replaceable"), "doc", { a: 1, b: 2 })
          yield* patchDocument(document.id, { data: { z: 0 }, merge_existing_data: false })
          expect((yield* read(`/block_documents/${document.id}`)).data).toEqual({ z: 0 })
        }))

      it.effect("moves a document to another schema of its type, not of another type (400)", () =>
        Effect.gen(function* () {
          const block = yield* makeBlock("movable")
          const document = yield* makeDocument(block, "doc", {})
          const newer = okAs(BlockSchema, yield* request("POST", "/block_schemas/", { body: { block_type_id: block.type.id, fields: { title: "v2" }, version: "2" } }), 201)
          yield* patchDocument(document.id, { data: {}, block_schema_id: newer.id })
          expect((yield* read(`/block_documents/${document.id}`)).block_schema_id).toBe(newer.id)
          const moved = yield* patchDocument(document.id, { data: {}, block_schema_id: (yield* makeBlock("foreign")).schema.id })
          expect(moved.status).toBe(400)
          expect(moved.body).toEqual({ detail: "Must migrate block document to a block schema of the same block type." })
        }))

      it.effect("refuses a name (422); an unknown document is 404", () =>
        Effect.gen(function* () {
          const document = yield* makeDocument(yield* makeBlock("unpatchable"), "doc", {})
          expect((yield* patchDocument(MISSING, { data: {} })).status).toBe(404)
          expect((yield* patchDocument(document.id, { name: "renamed" })).status).toBe(422)
        }))
    })

    describe("the default result storage", () => {
      /** A document of a type with the capabilities of result storage. */
      const storageDocument = (slug: string) => Effect.flatMap(makeBlock(slug, [], ["read-path", "write-path"]), (block) => makeDocument(block, "results", { basepath: "/tmp" }))

      // First in its describe: nothing set the default yet.
      it.effect("is unset (null) until a storage document is PUT; then it reads that document", () =>
        Effect.gen(function* () {
          expect(yield* storageSetting).toEqual({ default_result_storage_block_id: null })
          const document = yield* storageDocument("storage")
          const put = yield* setStorage({ default_result_storage_block_id: document.id })
          expect(put.status).toBe(200)
          expect(put.body).toEqual({ default_result_storage_block_id: document.id })
          expect(yield* storageSetting).toEqual({ default_result_storage_block_id: document.id })
        }))

      it.effect("refuses a document without the storage capabilities (422), an unknown one (404), and no id (422)", () =>
        Effect.gen(function* () {
          const plain = yield* makeDocument(yield* makeBlock("not-storage"), "plain", {})
          const refused = yield* setStorage({ default_result_storage_block_id: plain.id })
          expect(refused.status).toBe(422)
          expect(refused.body).toEqual({ detail: `Block document ${plain.id} cannot be used for result storage.` })
          const missing = yield* setStorage({ default_result_storage_block_id: MISSING })
          expect(missing.status).toBe(404)
          expect(missing.body).toEqual({ detail: `Block document ${MISSING} not found.` })
          expect((yield* setStorage({})).status).toBe(422)
        }))

      it.effect("deleting another type's documents leaves it; deleting the storage schema takes its documents and clears it", () =>
        Effect.gen(function* () {
          const storage = yield* makeBlock("storage-schema", [], ["read-path", "write-path"])
          const document = yield* makeDocument(storage, "results", { basepath: "/tmp" })
          ok(yield* setStorage({ default_result_storage_block_id: document.id }), 200)
          const notStorage = yield* makeBlock("another-type")
          const plain = yield* makeDocument(notStorage, "plain", {})
          expect((yield* request("DELETE", `/block_types/${notStorage.type.id}`)).status).toBe(204)
          expect((yield* request("GET", `/block_documents/${plain.id}`)).status).toBe(404)
          expect((yield* storageSetting).default_result_storage_block_id).toBe(document.id)
          expect((yield* request("DELETE", `/block_schemas/${storage.schema.id}`)).status).toBe(204)
          expect((yield* request("GET", `/block_documents/${document.id}`)).status).toBe(404)
          expect(yield* storageSetting).toEqual({ default_result_storage_block_id: null })
        }))

      it.effect("DELETE clears it, twice too", () =>
        Effect.gen(function* () {
          ok(yield* setStorage({ default_result_storage_block_id: (yield* storageDocument("storage-cleared")).id }), 200)
          expect((yield* request("DELETE", "/admin/storage")).status).toBe(204)
          expect((yield* request("DELETE", "/admin/storage")).status).toBe(204)
          expect(yield* storageSetting).toEqual({ default_result_storage_block_id: null })
        }))

      it.effect("deleting its document clears it", () =>
        Effect.gen(function* () {
          const document = yield* makeDocument(yield* makeBlock("storage-two", [], ["write-path"]), "results-two", {})
          ok(yield* setStorage({ default_result_storage_block_id: document.id }), 200)
          expect((yield* request("DELETE", `/block_documents/${document.id}`)).status).toBe(204)
          expect(yield* storageSetting).toEqual({ default_result_storage_block_id: null })
        }))
    })
  })
})
