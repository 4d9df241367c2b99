import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { BlockSchema, BlockType } from "../../src/blocks/schemas.ts"
import { ok, okAs, once } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"
const EMPTY_CHECKSUM = "sha256:f8e6e96abbc38504d4e9c99fc57281fa0026bede1fa42db79f22f984501710f4"

const createType = (body: Record<string, unknown>) => request("POST", "/block_types/", { body })
const makeType = (name: string, slug: string, body: Record<string, unknown> = {}) =>
  Effect.map(createType({ name, slug, ...body }), (res) => okAs(BlockType, res, 201))
const createSchema = (body: Record<string, unknown>) => request("POST", "/block_schemas/", { body })
const typeNames = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/block_types/filter", { body }), (res) => ok(res, 200).map((t) => t.name))

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

const schemasOfType = (typeId: string) =>
  Effect.map(request("POST", "/block_schemas/filter", { body: { block_schemas: { block_type_id: { any_: [typeId] } } } }), (res) => ok(res, 200))
const installSystemTypes = Effect.map(request("POST", "/block_types/install_system_block_types"), (res) => ok(res, 200))
const secretType = Effect.zipRight(installSystemTypes, Effect.map(request("GET", "/block_types/slug/secret"), (res) => okAs(BlockType, res, 200)))

/** A child type and schema, and a parent type: the child's fields, its stored schema and the parent's fields naming it. */
const family = (suffix: string) =>
  Effect.gen(function* () {
    const childType = yield* makeType(`Child${suffix}`, `child${suffix}`)
    const parentType = yield* makeType(`Parent${suffix}`, `parent${suffix}`)
    const child = fieldsOf("Child", `child${suffix}`, { a: { title: "A", type: "string", position: 0 } }, { required: ["a"] })
    const childAlone = okAs(BlockSchema, yield* createSchema({ fields: child, block_type_id: childType.id }), 201)
    const parent = fieldsOf(
      "Parent",
      `parent${suffix}`,
      { child: { $ref: "#/definitions/Child", position: 0 }, note: { title: "Note", type: "string", position: 1 } },
      {
        required: ["child"],
        block_schema_references: { child: { block_type_slug: `child${suffix}`, block_schema_checksum: childAlone.checksum } },
        definitions: { Child: child }
      }
    )
    return { childType, parentType, child, childAlone, parent }
  })

/** Types Duck (swim, fly), Bird (fly) and Cat (run), a second apart, each with a schema; read only. */
const animals = once(
  Effect.gen(function* () {
    for (const [name, capabilities] of [["Duck", ["swim", "fly"]], ["Bird", ["fly"]], ["Cat", ["run"]]] as const) {
      yield* TestClock.adjust("1 second")
      const type = yield* makeType(name, name.toLowerCase())
      ok(yield* createSchema({ fields: fieldsOf(name, name.toLowerCase(), {}), block_type_id: type.id, capabilities }), 201)
    }
    return { slug: { any_: ["duck", "bird", "cat"] } }
  })
)

describe("block types, block schemas and capabilities", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    describe("block types", () => {
      it.effect("are created (201) with the logo URL trimmed and HTML in the description escaped, and read by id and by slug", () =>
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
        }))

      it.effect("refuse a name taken (409)", () =>
        Effect.gen(function* () {
          yield* makeType("taken", "taken")
          const taken = yield* createType({ name: "taken", slug: "taken" })
          expect(taken.status).toBe(409)
          expect(taken.body).toEqual({ detail: 'Block type with name "taken" already exists' })
        }))

      it.effect("take names with spaces, colons, backslashes, emoji and bars", () =>
        Effect.gen(function* () {
          for (const name of ["my block type", "my:block type", "my\\block type", "my👍block type", "my|block type"]) {
            expect((yield* createType({ name, slug: `s-${name.length}-${name.charCodeAt(2)}` })).status, name).toBe(201)
          }
        }))

      it.effect("refuse names with % or / (422)", () =>
        Effect.gen(function* () {
          for (const name of ["my%block_type", "my/block type"]) expect((yield* createType({ name, slug: "ok" })).status, name).toBe(422)
        }))

      it.effect("refuse names beginning with Prefect, in any case (403)", () =>
        Effect.gen(function* () {
          for (const name of ["PrefectBlockType", "Prefect", "prefect_block_type", "pReFeCt!"]) {
            const res = yield* createType({ name, slug: "reserved" })
            expect(res.status, name).toBe(403)
            expect(res.body).toEqual({ detail: "Block type names beginning with 'Prefect' are reserved." })
          }
        }))

      it.effect("refuse a slug with other than lowercase letters, numbers and dashes, and is_protected (422)", () =>
        Effect.gen(function* () {
          const badSlug = yield* createType({ name: "bad slug", slug: "bad slug" })
          expect(badSlug.status).toBe(422)
          expect(badSlug.body.detail[0]).toMatchObject({ loc: ["body", "slug"], msg: "Value error, Block type slug must only contain lowercase letters, numbers, and dashes." })
          expect((yield* createType({ name: "extra", slug: "extra", is_protected: true })).status).toBe(422)
        }))

      it.effect("an unknown slug or id is 404", () =>
        Effect.gen(function* () {
          expect((yield* request("GET", "/block_types/slug/not-a-real-block")).body).toEqual({ detail: "Block type not found" })
          expect((yield* request("GET", `/block_types/${MISSING}`)).status).toBe(404)
        }))

      it.effect("PATCH updates the four descriptive fields (204); null clears one", () =>
        Effect.gen(function* () {
          const type = yield* makeType("patchable", "patchable")
          const patch = yield* request("PATCH", `/block_types/${type.id}`, { body: { logo_url: "http://l", documentation_url: "http://d", description: "new", code_example: "ex" } })
          expect(patch.status).toBe(204)
          const read = ok(yield* request("GET", `/block_types/${type.id}`), 200)
          expect(read).toMatchObject({ name: "patchable", logo_url: "http://l", documentation_url: "http://d", description: "new", code_example: "ex" })
          expect(Date.parse(read.updated as string)).toBeGreaterThanOrEqual(Date.parse(type.updated!))
          expect((yield* request("PATCH", `/block_types/${type.id}`, { body: { description: null } })).status).toBe(204)
          expect(ok(yield* request("GET", `/block_types/${type.id}`), 200).description).toBeNull()
        }))

      it.effect("PATCH refuses a name (422); an unknown type is 404", () =>
        Effect.gen(function* () {
          const type = yield* makeType("unrenamed", "unrenamed")
          expect((yield* request("PATCH", `/block_types/${type.id}`, { body: { name: "renamed" } })).status).toBe(422)
          expect((yield* request("PATCH", `/block_types/${MISSING}`, { body: {} })).status).toBe(404)
        }))

      it.effect("DELETE removes a type (204); once gone, or unknown, 404", () =>
        Effect.gen(function* () {
          const type = yield* makeType("deleted", "deleted")
          expect((yield* request("DELETE", `/block_types/${type.id}`)).status).toBe(204)
          expect((yield* request("GET", `/block_types/${type.id}`)).status).toBe(404)
          expect((yield* request("DELETE", `/block_types/${MISSING}`)).status).toBe(404)
        }))
    })

    describe("block schemas", () => {
      it.effect("are created (201) with the checksum of their fields, and again (200) the same; read by id", () =>
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
        }))

      it.effect("are read by checksum and version; without a version, the newest", () =>
        Effect.gen(function* () {
          const type = yield* makeType("versioned", "versioned")
          const v1 = ok(yield* createSchema({ fields: {}, block_type_id: type.id, version: "1.0.1" }), 201)
          yield* TestClock.adjust("1 second")
          const v2 = ok(yield* createSchema({ fields: {}, block_type_id: type.id, version: "1.1.0" }), 201)
          expect(v1.checksum).toBe(EMPTY_CHECKSUM)
          expect(ok(yield* request("GET", `/block_schemas/checksum/${EMPTY_CHECKSUM}?version=1.0.1`), 200).id).toBe(v1.id)
          expect(ok(yield* request("GET", `/block_schemas/checksum/${EMPTY_CHECKSUM}?version=1.1.0`), 200).id).toBe(v2.id)
          expect(ok(yield* request("GET", `/block_schemas/checksum/${EMPTY_CHECKSUM}`), 200).id).toBe(v2.id)
          expect((yield* request("GET", "/block_schemas/checksum/sha256:nope")).body).toEqual({ detail: "Block schema not found" })
        }))

      it.effect("refuse an unknown type (404) and a field there is not (422)", () =>
        Effect.gen(function* () {
          const type = yield* makeType("refusing", "refusing")
          const unknownType = yield* createSchema({ fields: {}, block_type_id: MISSING })
          expect(unknownType.status).toBe(404)
          expect(unknownType.body).toEqual({ detail: `Block type ${MISSING} not found.` })
          expect((yield* createSchema({ fields: {}, block_type_id: type.id, extra: 1 })).status).toBe(422)
        }))

      it.effect("store nested block schemas once and put them back into the parent's fields", () =>
        Effect.gen(function* () {
          const { childType, parentType, child, childAlone, parent } = yield* family("")
          const created = yield* createSchema({ fields: parent, block_type_id: parentType.id })
          expect(created.status).toBe(201)
          const read = ok(yield* request("GET", `/block_schemas/${created.body.id}`), 200)
          expect(read.fields.block_schema_references).toEqual({ child: { block_type_slug: "child", block_schema_checksum: childAlone.checksum } })
          expect(read.fields.definitions).toEqual({ Child: child })
          expect(read.fields.properties).toEqual(parent.properties)
          // The child was found by its checksum, not stored again.
          expect((yield* schemasOfType(childType.id)).map((s) => s.id)).toEqual([childAlone.id])
          // Posting the same parent again finds it.
          expect((yield* createSchema({ fields: parent, block_type_id: parentType.id })).status).toBe(200)
        }))

      it.effect("a parent whose child schema is not stored yet stores it from its definitions", () =>
        Effect.gen(function* () {
          const { parentType } = yield* family("-holding")
          const otherType = yield* makeType("Other", "other")
          const other = fieldsOf("Other", "other", { b: { title: "B", type: "integer", position: 0 } })
          const holder = fieldsOf("Holder", "parent-holding", { other: { $ref: "#/definitions/Other", position: 0 } }, {
            block_schema_references: { other: { block_type_slug: "other", block_schema_checksum: "sha256:unknown" } },
            definitions: { Other: other }
          })
          const stored = ok(yield* createSchema({ fields: holder, block_type_id: parentType.id }), 201)
          const otherSchemas = yield* schemasOfType(otherType.id)
          expect(otherSchemas).toHaveLength(1)
          expect(otherSchemas[0].fields).toEqual(other)
          const holderRead = ok(yield* request("GET", `/block_schemas/${stored.id}`), 200)
          expect(holderRead.fields.block_schema_references.other.block_schema_checksum).toBe(otherSchemas[0].checksum)
          expect(holderRead.fields.definitions).toEqual({ Other: other })
        }))

      it.effect("a reference to a block type that does not exist is 409, and nothing is stored", () =>
        Effect.gen(function* () {
          const { parentType } = yield* family("-orphaned")
          const orphan = fieldsOf("Orphan", "parent-orphaned", { x: { $ref: "#/definitions/X" } }, {
            block_schema_references: { x: { block_type_slug: "no-such-type", block_schema_checksum: "sha256:x" } },
            definitions: { X: fieldsOf("X", "no-such-type", {}) }
          })
          const refused = yield* createSchema({ fields: orphan, block_type_id: parentType.id })
          expect(refused.status).toBe(409)
          expect(refused.body.detail).toContain("block type 'no-such-type' was not found")
          expect(yield* schemasOfType(parentType.id)).toHaveLength(0)
        }))

      it.effect("a reference to an unknown child schema without its definitions is 422, not a server error", () =>
        Effect.gen(function* () {
          const { parentType } = yield* family("-undefined")
          yield* makeType("Undefined", "undefined-child")
          const noDefinitions = fieldsOf("NoDefs", "parent-undefined", { y: { $ref: "#/definitions/Y" } }, {
            block_schema_references: { y: { block_type_slug: "undefined-child", block_schema_checksum: "sha256:y" } }
          })
          expect((yield* createSchema({ fields: noDefinitions, block_type_id: parentType.id })).status).toBe(422)
        }))

      it.effect("are deleted (204); once gone, or unknown, 404; their capabilities leave the list", () =>
        Effect.gen(function* () {
          const type = yield* makeType("Lizard", "lizard")
          const schema = ok(yield* createSchema({ fields: fieldsOf("Lizard", "lizard", {}), block_type_id: type.id, capabilities: ["crawl"] }), 201)
          expect(ok(yield* request("GET", "/block_capabilities/"), 200)).toContain("crawl")
          expect((yield* request("DELETE", `/block_schemas/${schema.id}`)).status).toBe(204)
          expect((yield* request("GET", `/block_schemas/${schema.id}`)).status).toBe(404)
          expect((yield* request("DELETE", `/block_schemas/${MISSING}`)).status).toBe(404)
          expect(ok(yield* request("GET", "/block_capabilities/"), 200)).not.toContain("crawl")
        }))
    })

    describe("filters and capabilities", () => {
      const filters: Array<readonly [string, (scope: Record<string, unknown>) => Record<string, unknown>, Array<string>]> = [
        ["by slug, sorted by name", (scope) => ({ block_types: scope }), ["Bird", "Cat", "Duck"]],
        ["by a name like", (scope) => ({ block_types: { ...scope, name: { like_: "duck" } } }), ["Duck"]],
        ["by a name like a letter", (scope) => ({ block_types: { ...scope, name: { like_: "c" } } }), ["Cat", "Duck"]],
        ["by a name like nothing there is", (scope) => ({ block_types: { ...scope, name: { like_: "z" } } }), []],
        ["by all of their schemas' capabilities", () => ({ block_schemas: { block_capabilities: { all_: ["fly", "swim"] } } }), ["Duck"]],
        ["by one of their schemas' capabilities", () => ({ block_schemas: { block_capabilities: { all_: ["fly"] } } }), ["Bird", "Duck"]],
        ["up to a limit", (scope) => ({ block_types: scope, limit: 2 }), ["Bird", "Cat"]],
        ["from an offset", (scope) => ({ block_types: scope, offset: 2 }), ["Duck"]]
      ]
      for (const [title, body, expected] of filters) {
        it.effect(`filter types ${title}`, () => Effect.gen(function* () {
          expect(yield* typeNames(body(yield* animals))).toEqual(expected)
        }))
      }

      it.effect("a limit above 200 is refused", () =>
        Effect.gen(function* () {
          expect((yield* request("POST", "/block_types/filter", { body: { limit: 201 } })).body).toEqual({ detail: "Invalid limit: must be less than or equal to 200." })
        }))

      it.effect("filter schemas by capabilities, newest first", () =>
        Effect.gen(function* () {
          yield* animals
          const flyers = ok(yield* request("POST", "/block_schemas/filter", { body: { block_schemas: { block_capabilities: { all_: ["fly"] } } } }), 200)
          // Bird's schema was created after Duck's.
          expect(flyers.map((s) => s.block_type.name)).toEqual(["Bird", "Duck"])
        }))

      it.effect("list every capability, sorted", () =>
        Effect.gen(function* () {
          yield* animals
          const capabilities = ok(yield* request("GET", "/block_capabilities/"), 200)
          expect(capabilities).toEqual(expect.arrayContaining(["fly", "run", "swim"]))
          expect([...capabilities].sort()).toEqual(capabilities)
        }))
    })

    describe("the system block types", () => {
      it.effect("are installed idempotently (200, null)", () =>
        Effect.gen(function* () {
          for (let i = 0; i < 3; i++) {
            const res = yield* request("POST", "/block_types/install_system_block_types")
            expect(res.status).toBe(200)
            expect(res.body).toBeNull()
          }
        }))

      it.effect("are protected, and include the ones clients expect", () =>
        Effect.gen(function* () {
          expect(yield* secretType).toMatchObject({ name: "Secret", is_protected: true })
          for (const slug of ["webhook", "local-file-system", "json", "string", "date-time", "slack-webhook", "custom-webhook"]) {
            expect((yield* request("GET", `/block_types/slug/${slug}`)).status, slug).toBe(200)
          }
        }))

      it.effect("have one schema each, with their secret fields", () =>
        Effect.gen(function* () {
          const secretSchemas = yield* schemasOfType((yield* secretType).id)
          expect(secretSchemas).toHaveLength(1)
          expect(secretSchemas[0].fields.secret_fields).toEqual(["value"])
        }))

      it.effect("can neither be deleted nor have their schemas deleted (403)", () =>
        Effect.gen(function* () {
          const secret = yield* secretType
          const refused = yield* request("DELETE", `/block_types/${secret.id}`)
          expect(refused.status).toBe(403)
          expect(refused.body).toEqual({ detail: "protected block types cannot be deleted." })
          const [schema] = yield* schemasOfType(secret.id)
          const refusedSchema = yield* request("DELETE", `/block_schemas/${schema!.id}`)
          expect(refusedSchema.status).toBe(403)
          expect(refusedSchema.body).toEqual({ detail: "Block schemas for protected block types cannot be deleted." })
        }))

      it.effect("can change; installing again restores them", () =>
        Effect.gen(function* () {
          const secret = yield* secretType
          expect((yield* request("PATCH", `/block_types/${secret.id}`, { body: { description: "Hi there!" } })).status).toBe(204)
          yield* installSystemTypes
          expect(ok(yield* request("GET", "/block_types/slug/secret"), 200).description).not.toBe("Hi there!")
        }))

      it.effect("take a client's own schema version", () =>
        Effect.gen(function* () {
          expect((yield* createSchema({ fields: { title: "Secret" }, block_type_id: (yield* secretType).id })).status).toBe(201)
        }))
    })
  })
})
