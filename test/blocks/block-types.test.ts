import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"
const EMPTY_CHECKSUM = "sha256:f8e6e96abbc38504d4e9c99fc57281fa0026bede1fa42db79f22f984501710f4"

const createType = (body: Record<string, unknown>) => request("POST", "/block_types/", { body })
const makeType = (name: string, slug: string, body: Record<string, unknown> = {}) =>
  Effect.map(createType({ name, slug, ...body }), (res) => ok(res, 201))
const createSchema = (body: Record<string, unknown>) => request("POST", "/block_schemas/", { body })
const typeNames = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/block_types/filter", { body }), (res) => ok(res, 200).map((t: any) => t.name))

/** A block class's schema fields, as a client sends them. */
const fieldsOf = (title: string, slug: string, properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  title,
  type: "object",
  properties,
  block_type_slug: slug,
  secret_fields: [],
  block_schema_references: {},
  ...extra
})

describe("block types, block schemas and capabilities", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("creates block types (201), refuses bad names, bad slugs, reserved names and taken slugs", () =>
      Effect.gen(function* () {
        const created = yield* createType({
          name: "x",
          slug: "x",
          logo_url: "  http://example.com/logo.png ",
          documentation_url: "http://example.com/docs",
          description: "A block, verily <b>",
          code_example: "```python\nfrom x import X\n```"
        })
        expect(created.status).toBe(201)
        expect(created.body).toMatchObject({
          name: "x",
          slug: "x",
          logo_url: "http://example.com/logo.png",
          description: "A block, verily &lt;b&gt;",
          code_example: "```python\nfrom x import X\n```",
          is_protected: false
        })
        expect(ok(yield* request("GET", `/block_types/${created.body.id}`), 200)).toEqual(created.body)
        expect(ok(yield* request("GET", "/block_types/slug/x"), 200)).toEqual(created.body)

        const taken = yield* createType({ name: "x", slug: "x" })
        expect(taken.status).toBe(409)
        expect(taken.body).toEqual({ detail: 'Block type with name "x" already exists' })
        for (const name of ["my block type", "my:block type", "my\\block type", "my👍block type", "my|block type"]) {
          expect((yield* createType({ name, slug: `s-${name.length}-${name.charCodeAt(2)}` })).status, name).toBe(201)
        }
        for (const name of ["my%block_type", "my/block type"]) {
          expect((yield* createType({ name, slug: "ok" })).status, name).toBe(422)
        }
        for (const name of ["PrefectBlockType", "Prefect", "prefect_block_type", "pReFeCt!"]) {
          const res = yield* createType({ name, slug: "reserved" })
          expect(res.status, name).toBe(403)
          expect(res.body).toEqual({ detail: "Block type names beginning with 'Prefect' are reserved." })
        }
        const badSlug = yield* createType({ name: "bad slug", slug: "bad slug" })
        expect(badSlug.status).toBe(422)
        expect(badSlug.body.detail[0]).toMatchObject({
          loc: ["body", "slug"],
          msg: "Value error, Block type slug must only contain lowercase letters, numbers, and dashes."
        })
        expect((yield* createType({ name: "extra", slug: "extra", is_protected: true })).status).toBe(422)
        expect((yield* request("GET", "/block_types/slug/not-a-real-block")).body).toEqual({ detail: "Block type not found" })
        expect((yield* request("GET", `/block_types/${MISSING}`)).status).toBe(404)
      })
    )

    it.effect("updates the four descriptive fields (204), deletes (204), and 404s for unknown ids", () =>
      Effect.gen(function* () {
        const type = yield* makeType("patchable", "patchable")
        const patch = yield* request("PATCH", `/block_types/${type.id}`, {
          body: { logo_url: "http://l", documentation_url: "http://d", description: "new", code_example: "ex" }
        })
        expect(patch.status).toBe(204)
        const read = ok(yield* request("GET", `/block_types/${type.id}`), 200)
        expect(read).toMatchObject({ name: "patchable", logo_url: "http://l", documentation_url: "http://d", description: "new", code_example: "ex" })
        expect(new Date(read.updated).getTime()).toBeGreaterThanOrEqual(new Date(type.updated).getTime())
        expect((yield* request("PATCH", `/block_types/${type.id}`, { body: { description: null } })).status).toBe(204)
        expect(ok(yield* request("GET", `/block_types/${type.id}`), 200).description).toBeNull()
        expect((yield* request("PATCH", `/block_types/${type.id}`, { body: { name: "renamed" } })).status).toBe(422)
        expect((yield* request("PATCH", `/block_types/${MISSING}`, { body: {} })).status).toBe(404)

        expect((yield* request("DELETE", `/block_types/${type.id}`)).status).toBe(204)
        expect((yield* request("GET", `/block_types/${type.id}`)).status).toBe(404)
        expect((yield* request("DELETE", `/block_types/${MISSING}`)).status).toBe(404)
      })
    )

    it.effect("creates block schemas idempotently by checksum and version, and reads them by checksum", () =>
      Effect.gen(function* () {
        const type = yield* makeType("schemed", "schemed")
        const first = yield* createSchema({ fields: {}, block_type_id: type.id })
        expect(first.status).toBe(201)
        expect(first.body).toMatchObject({ checksum: EMPTY_CHECKSUM, version: "non-versioned", capabilities: [], block_type_id: type.id })
        expect(first.body.block_type).toMatchObject({ id: type.id, slug: "schemed" })
        const again = yield* createSchema({ fields: {}, block_type_id: type.id })
        expect(again.status).toBe(200)
        expect(again.body).toEqual(first.body)
        expect(ok(yield* request("GET", `/block_schemas/${first.body.id}`), 200)).toEqual(first.body)

        const v1 = ok(yield* createSchema({ fields: {}, block_type_id: type.id, version: "1.0.1" }), 201)
        yield* TestClock.adjust("1 second")
        const v2 = ok(yield* createSchema({ fields: {}, block_type_id: type.id, version: "1.1.0" }), 201)
        expect(v1.checksum).toBe(EMPTY_CHECKSUM)
        expect(ok(yield* request("GET", `/block_schemas/checksum/${EMPTY_CHECKSUM}?version=1.0.1`), 200).id).toBe(v1.id)
        expect(ok(yield* request("GET", `/block_schemas/checksum/${EMPTY_CHECKSUM}?version=1.1.0`), 200).id).toBe(v2.id)
        expect(ok(yield* request("GET", `/block_schemas/checksum/${EMPTY_CHECKSUM}`), 200).id).toBe(v2.id)
        expect((yield* request("GET", "/block_schemas/checksum/sha256:nope")).body).toEqual({ detail: "Block schema not found" })

        const unknownType = yield* createSchema({ fields: {}, block_type_id: MISSING })
        expect(unknownType.status).toBe(404)
        expect(unknownType.body).toEqual({ detail: `Block type ${MISSING} not found.` })
        expect((yield* createSchema({ fields: {}, block_type_id: type.id, extra: 1 })).status).toBe(422)
      })
    )

    it.effect("stores nested block schemas once and puts them back into the parent's fields", () =>
      Effect.gen(function* () {
        const childType = yield* makeType("Child", "child")
        const parentType = yield* makeType("Parent", "parent")
        const child = fieldsOf("Child", "child", { a: { title: "A", type: "string", position: 0 } }, { required: ["a"] })
        const childAlone = ok(yield* createSchema({ fields: child, block_type_id: childType.id }), 201)

        const parent = fieldsOf(
          "Parent",
          "parent",
          { child: { $ref: "#/definitions/Child", position: 0 }, note: { title: "Note", type: "string", position: 1 } },
          {
            required: ["child"],
            block_schema_references: { child: { block_type_slug: "child", block_schema_checksum: childAlone.checksum } },
            definitions: { Child: child }
          }
        )
        const created = yield* createSchema({ fields: parent, block_type_id: parentType.id })
        expect(created.status).toBe(201)
        const read = ok(yield* request("GET", `/block_schemas/${created.body.id}`), 200)
        expect(read.fields.block_schema_references).toEqual({
          child: { block_type_slug: "child", block_schema_checksum: childAlone.checksum }
        })
        expect(read.fields.definitions).toEqual({ Child: child })
        expect(read.fields.properties).toEqual(parent.properties)
        // The child was found by its checksum, not stored again.
        const childSchemas = ok(
          yield* request("POST", "/block_schemas/filter", { body: { block_schemas: { block_type_id: { any_: [childType.id] } } } }),
          200
        )
        expect(childSchemas.map((s: any) => s.id)).toEqual([childAlone.id])
        // Posting the same parent again finds it.
        expect((yield* createSchema({ fields: parent, block_type_id: parentType.id })).status).toBe(200)

        // A parent whose child schema is not stored yet stores it from its definitions.
        const otherType = yield* makeType("Other", "other")
        const other = fieldsOf("Other", "other", { b: { title: "B", type: "integer", position: 0 } })
        const holder = fieldsOf(
          "Holder",
          "parent",
          { other: { $ref: "#/definitions/Other", position: 0 } },
          {
            block_schema_references: { other: { block_type_slug: "other", block_schema_checksum: "sha256:unknown" } },
            definitions: { Other: other }
          }
        )
        const stored = ok(yield* createSchema({ fields: holder, block_type_id: parentType.id }), 201)
        const otherSchemas = ok(
          yield* request("POST", "/block_schemas/filter", { body: { block_schemas: { block_type_id: { any_: [otherType.id] } } } }),
          200
        )
        expect(otherSchemas).toHaveLength(1)
        expect(otherSchemas[0].fields).toEqual(other)
        const holderRead = ok(yield* request("GET", `/block_schemas/${stored.id}`), 200)
        expect(holderRead.fields.block_schema_references.other.block_schema_checksum).toBe(otherSchemas[0].checksum)
        expect(holderRead.fields.definitions).toEqual({ Other: other })

        // A reference to a block type that does not exist: 409, and nothing is stored.
        const orphan = fieldsOf("Orphan", "parent", { x: { $ref: "#/definitions/X" } }, {
          block_schema_references: { x: { block_type_slug: "no-such-type", block_schema_checksum: "sha256:x" } },
          definitions: { X: fieldsOf("X", "no-such-type", {}) }
        })
        const refused = yield* createSchema({ fields: orphan, block_type_id: parentType.id })
        expect(refused.status).toBe(409)
        expect(refused.body.detail).toContain("block type 'no-such-type' was not found")
        const count = ok(
          yield* request("POST", "/block_schemas/filter", { body: { block_schemas: { block_type_id: { any_: [parentType.id] } } } }),
          200
        )
        expect(count).toHaveLength(2)
        // Without definitions for an unknown child schema: 422, not a server error.
        const noDefinitions = fieldsOf("NoDefs", "parent", { y: { $ref: "#/definitions/Y" } }, {
          block_schema_references: { y: { block_type_slug: "other", block_schema_checksum: "sha256:y" } }
        })
        expect((yield* createSchema({ fields: noDefinitions, block_type_id: parentType.id })).status).toBe(422)
      })
    )

    it.effect("filters types by name and by their schemas' capabilities, and lists capabilities", () =>
      Effect.gen(function* () {
        const animals: Array<[string, Array<string>]> = [["Duck", ["swim", "fly"]], ["Bird", ["fly"]], ["Cat", ["run"]]]
        const ids: Record<string, string> = {}
        for (const [name, capabilities] of animals) {
          yield* TestClock.adjust("1 second")
          const type = yield* makeType(name, name.toLowerCase())
          ids[name] = type.id
          ok(yield* createSchema({ fields: fieldsOf(name, name.toLowerCase(), {}), block_type_id: type.id, capabilities }), 201)
        }
        const scope = { slug: { any_: ["duck", "bird", "cat"] } }
        expect(yield* typeNames({ block_types: scope })).toEqual(["Bird", "Cat", "Duck"])
        expect(yield* typeNames({ block_types: { ...scope, name: { like_: "duck" } } })).toEqual(["Duck"])
        expect(yield* typeNames({ block_types: { ...scope, name: { like_: "c" } } })).toEqual(["Cat", "Duck"])
        expect(yield* typeNames({ block_types: { ...scope, name: { like_: "z" } } })).toEqual([])
        expect(yield* typeNames({ block_schemas: { block_capabilities: { all_: ["fly", "swim"] } } })).toEqual(["Duck"])
        expect(yield* typeNames({ block_schemas: { block_capabilities: { all_: ["fly"] } } })).toEqual(["Bird", "Duck"])
        expect(yield* typeNames({ block_types: scope, limit: 2 })).toEqual(["Bird", "Cat"])
        expect(yield* typeNames({ block_types: scope, offset: 2 })).toEqual(["Duck"])
        expect((yield* request("POST", "/block_types/filter", { body: { limit: 201 } })).body).toEqual({
          detail: "Invalid limit: must be less than or equal to 200."
        })

        const flyers = ok(
          yield* request("POST", "/block_schemas/filter", {
            body: { block_schemas: { block_capabilities: { all_: ["fly"] } } }
          }),
          200
        )
        // Newest first: Bird's schema was created after Duck's.
        expect(flyers.map((s: any) => s.block_type.name)).toEqual(["Bird", "Duck"])
        const capabilities = ok(yield* request("GET", "/block_capabilities/"), 200)
        expect(capabilities).toEqual(expect.arrayContaining(["fly", "run", "swim"]))
        expect([...capabilities].sort()).toEqual(capabilities)

        const catSchema = ok(
          yield* request("POST", "/block_schemas/filter", { body: { block_schemas: { block_type_id: { any_: [ids.Cat] } } } }),
          200
        )[0]
        expect((yield* request("DELETE", `/block_schemas/${catSchema.id}`)).status).toBe(204)
        expect((yield* request("GET", `/block_schemas/${catSchema.id}`)).status).toBe(404)
        expect((yield* request("DELETE", `/block_schemas/${MISSING}`)).status).toBe(404)
        expect(ok(yield* request("GET", "/block_capabilities/"), 200)).not.toContain("run")
      })
    )

    it.effect("installs the system block types idempotently; protected types can change but not be deleted", () =>
      Effect.gen(function* () {
        for (let i = 0; i < 3; i++) {
          const res = yield* request("POST", "/block_types/install_system_block_types")
          expect(res.status).toBe(200)
          expect(res.body).toBeNull()
        }
        const secret = ok(yield* request("GET", "/block_types/slug/secret"), 200)
        expect(secret).toMatchObject({ name: "Secret", is_protected: true })
        for (const slug of ["webhook", "local-file-system", "json", "string", "date-time", "slack-webhook", "custom-webhook"]) {
          expect((yield* request("GET", `/block_types/slug/${slug}`)).status, slug).toBe(200)
        }
        const secretSchemas = ok(
          yield* request("POST", "/block_schemas/filter", { body: { block_schemas: { block_type_id: { any_: [secret.id] } } } }),
          200
        )
        expect(secretSchemas).toHaveLength(1)
        expect(secretSchemas[0].fields.secret_fields).toEqual(["value"])

        expect((yield* request("PATCH", `/block_types/${secret.id}`, { body: { description: "Hi there!" } })).status).toBe(204)
        const refused = yield* request("DELETE", `/block_types/${secret.id}`)
        expect(refused.status).toBe(403)
        expect(refused.body).toEqual({ detail: "protected block types cannot be deleted." })
        const refusedSchema = yield* request("DELETE", `/block_schemas/${secretSchemas[0].id}`)
        expect(refusedSchema.status).toBe(403)
        expect(refusedSchema.body).toEqual({ detail: "Block schemas for protected block types cannot be deleted." })
        // A client may still add its own schema version to a protected type.
        expect((yield* createSchema({ fields: { title: "Secret" }, block_type_id: secret.id })).status).toBe(201)
        // Installing again restores the description and adds no second schema.
        ok(yield* request("POST", "/block_types/install_system_block_types"), 200)
        expect(ok(yield* request("GET", "/block_types/slug/secret"), 200).description).not.toBe("Hi there!")
      })
    )
  })
})
