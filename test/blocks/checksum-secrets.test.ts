import { describe, expect, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { blockSchemaChecksum, pythonJson } from "../../src/blocks/checksum.ts"
import { open, seal } from "../../src/blocks/encryption.ts"
import { OBFUSCATED, obfuscateSecrets, restoreSecrets, secretPaths } from "../../src/blocks/secrets.ts"
import { systemBlocks } from "../../src/blocks/system-blocks.ts"

describe("block schema checksums", () => {
  // Checksums clients compute for these fields (so GET /block_schemas/checksum/{checksum} finds them).
  it("match the checksums clients compute", () => {
    expect(blockSchemaChecksum({})).toBe("sha256:f8e6e96abbc38504d4e9c99fc57281fa0026bede1fa42db79f22f984501710f4")
    expect(blockSchemaChecksum({ definitions: {} })).toBe(
      "sha256:79b9787dcd02e098a1b261c2d8be3dbe363953714e67eccf5610554df8050ed1"
    )
    const aws = {
      title: "x",
      type: "object",
      properties: {
        access_key_id: { title: "Access Key Id", type: "string" },
        secret_access_key: { title: "Secret Access Key", type: "string" },
        session_token: { title: "Session Token", type: "string" }
      },
      block_type_slug: "x",
      block_schema_references: {}
    }
    expect(blockSchemaChecksum(aws)).toBe("sha256:4448d5cf2ddb989f7fde8b2c36ec89527ca30e0e8ef041eed8bd15c11fe6cfee")
    const registered = {
      title: "MyRegisteredBlock",
      type: "object",
      properties: {
        x: { title: "X", type: "string", position: 0 },
        y: { title: "Y", default: 1, type: "integer", position: 1 }
      },
      block_schema_references: {},
      block_type_slug: "myregisteredblock",
      required: ["x"],
      secret_fields: []
    }
    expect(blockSchemaChecksum(registered)).toBe("sha256:0170f6bdcfdab859f8a7724becba29ad359b0116d0a3492356c1028369edbf8c")
    // Secret fields and key order do not change a checksum.
    expect(blockSchemaChecksum({ ...registered, secret_fields: ["x"] })).toBe(blockSchemaChecksum(registered))
    expect(blockSchemaChecksum(Object.fromEntries(Object.entries(registered).reverse()))).toBe(blockSchemaChecksum(registered))
  })

  it("hash only the definitions that are not blocks of their own", () => {
    const block = { title: "Child", block_type_slug: "child", properties: {} }
    const model = { title: "Options", type: "object", properties: { retries: { type: "integer" } } }
    const fields = {
      properties: { child: { $ref: "#/definitions/Child" }, options: { $ref: "#/definitions/Options" } },
      definitions: { Child: block, Options: model }
    }
    const withoutBlock = { ...fields, definitions: { Options: model } }
    expect(blockSchemaChecksum(fields)).toBe(blockSchemaChecksum(withoutBlock))
    expect(blockSchemaChecksum(fields)).not.toBe(blockSchemaChecksum({ ...fields, definitions: { Child: block } }))
  })

  it("serialise JSON as Python prints it", () => {
    expect(pythonJson({ b: [1, 1.5, true, null], a: "é\n\"", c: {} })).toBe('{"a": "\\u00e9\\n\\"", "b": [1, 1.5, true, null], "c": {}}')
    expect(pythonJson([1e16 + 2, 1e-5, 0.0001, 1e-7, 2.5e21])).toBe("[10000000000000002, 1e-05, 0.0001, 1e-07, 2.5e+21]")
    expect(pythonJson("\u007f😀")).toBe('"\\u007f\\ud83d\\ude00"')
  })

  it("give every system block a distinct schema with the fields clients expect", () => {
    const checksums = systemBlocks.map((block) => blockSchemaChecksum(block.fields))
    expect(new Set(checksums).size).toBe(systemBlocks.length)
    const bySlug = Object.fromEntries(systemBlocks.map((b) => [b.slug, b]))
    expect(bySlug.secret!.fields.secret_fields).toEqual(["value"])
    expect(bySlug.webhook!.fields.secret_fields).toEqual(["url", "headers.*"])
    expect(bySlug["local-file-system"]!.capabilities).toEqual(["get-directory", "put-directory", "read-path", "write-path"])
    expect(systemBlocks.filter((b) => b.is_protected).map((b) => b.slug).sort()).toEqual(["local-file-system", "secret", "webhook"])
    for (const block of systemBlocks) expect(block.fields.block_type_slug, block.slug).toBe(block.slug)
  })
})

describe("secret fields", () => {
  const paths = secretPaths({ secret_fields: ["password", "nested.token", "headers.*", "missing.path"] })
  const data = { password: "p", nested: { token: "t", other: 1 }, headers: { a: "1", b: { c: "2" } }, plain: "x" }

  it("are obfuscated where the schema says, wildcards covering everything below", () => {
    expect(obfuscateSecrets(data, paths)).toEqual({
      password: OBFUSCATED,
      nested: { token: OBFUSCATED, other: 1 },
      headers: { a: OBFUSCATED, b: { c: OBFUSCATED } },
      plain: "x"
    })
    expect(data.password).toBe("p")
    // An unset secret stays null; an object under a plain path is hidden whole.
    expect(obfuscateSecrets({ password: null }, paths)).toEqual({ password: null })
    expect(obfuscateSecrets({ password: { user: "u" } }, paths)).toEqual({ password: OBFUSCATED })
  })

  it("sent back obfuscated keep their stored values; new values replace them", () => {
    const shown = obfuscateSecrets(data, paths)
    expect(restoreSecrets(shown, data, paths)).toEqual(data)
    const edited = { ...shown, password: "new", headers: { a: OBFUSCATED, b: { c: "3" } } }
    expect(restoreSecrets(edited, data, paths)).toEqual({ ...data, password: "new", headers: { a: "1", b: { c: "3" } } })
    // Nothing stored: the placeholder is kept as it was sent.
    expect(restoreSecrets({ password: OBFUSCATED }, {}, paths)).toEqual({ password: OBFUSCATED })
  })
})

describe("block data sealing", () => {
  it("round-trips, differs each time, and refuses another key or altered data", () => {
    const key = randomBytes(32)
    const value = { password: "hunter2", list: [1, "two"] }
    const sealed = seal(key, value)
    expect(sealed).not.toContain("hunter2")
    expect(open(key, sealed)).toEqual(value)
    expect(seal(key, value)).not.toBe(sealed)
    expect(() => open(randomBytes(32), sealed)).toThrow()
    // One bit of the ciphertext flipped (editing the text could change only the unused bits of its last character).
    const [version, payload] = sealed.split(".")
    const bytes = Buffer.from(payload!, "base64url")
    bytes[bytes.length >> 1]! ^= 1
    const tampered = `${version}.${bytes.toString("base64url")}`
    expect(() => open(key, tampered)).toThrow()
  })
})
