/** JSON texts joined into one UTF-8 body (src/domain/json-list.ts): the bytes the joined string encodes to. */
import { describe, expect, it } from "@effect/vitest"
import { jsonListBytes } from "../../src/domain/json-list.ts"

const decoded = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

describe("jsonListBytes", () => {
  it("writes the items between brackets, separated by commas", () => {
    const items = [JSON.stringify({ a: 1 }), JSON.stringify("x"), "null"]
    expect(decoded(jsonListBytes(items))).toBe(`[${items.join(",")}]`)
    expect(JSON.parse(decoded(jsonListBytes(items)))).toEqual([{ a: 1 }, "x", null])
  })

  it("writes an empty list as []", () => {
    expect(decoded(jsonListBytes([]))).toBe("[]")
    expect(decoded(jsonListBytes([], `{"results":[`, `],"count":0}`))).toBe(`{"results":[],"count":0}`)
  })

  it("encodes text outside ASCII to exactly its UTF-8 bytes", () => {
    const items = [JSON.stringify({ name: "día-é-中文-😀" }), JSON.stringify("\u00ff\u0100"), JSON.stringify("plain")]
    const bytes = jsonListBytes(items, `{"results":[`, `],"note":"ünïcode"}`)
    const expected = new TextEncoder().encode(`{"results":[${items.join(",")}],"note":"ünïcode"}`)
    expect(bytes.length).toBe(expected.length)
    expect(Buffer.compare(Buffer.from(bytes), Buffer.from(expected))).toBe(0)
  })

  it("gives a page of 200 runs' texts as the joined string would", () => {
    const items = Array.from({ length: 200 }, (_, i) => JSON.stringify({ id: i, name: `run-${i}-ß`, tags: ["a", "b"], parameters: { x: "y".repeat(i) } }))
    expect(decoded(jsonListBytes(items))).toBe(`[${items.join(",")}]`)
  })
})
