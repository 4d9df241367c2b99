/**
 * The plain-shape decoder of /events/in (events/decode.ts) against Event's Schema: whatever it
 * takes decodes through Schema to an equal value; what it leaves, Schema decides. And the bound on
 * an event's serialised size from the length of its text (events/service.ts), which lets the size
 * check skip serialising.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc, Schema } from "effect"
import { decodePlainEvent } from "../../src/events/decode.ts"
import { Event } from "../../src/events/schemas.ts"
import { serialisedAtMost } from "../../src/events/service.ts"
import { wireSamples } from "../support/fuzz/arbitraries.ts"

const decodeWithSchema = Schema.decodeUnknownEither(Event)

/** Fails unless the plain decoder's answer, when it gives one, is Schema's. */
const agrees = (input: unknown) => {
  const plain = decodePlainEvent(input)
  if (plain === undefined) return false
  const decoded = decodeWithSchema(input)
  expect(Either.isRight(decoded), JSON.stringify(input)).toBe(true)
  expect(plain).toEqual(Either.getOrThrow(decoded))
  return true
}

const base = {
  id: "0192f3a4-5b6c-7d8e-9f00-112233445566",
  occurred: "2026-11-27T07:00:00.000Z",
  event: "prefect.flow-run.Completed",
  resource: { "prefect.resource.id": "prefect.flow-run.1", "prefect.resource.name": "run" },
  related: [{ "prefect.resource.id": "prefect.flow.1", "prefect.resource.role": "flow" }],
  payload: { n: 1, nested: { list: [1, "two", null] } },
  follows: null
}

/** Valid events and near misses: each field missing, mistyped or just out of bounds. */
const nearMisses: ReadonlyArray<unknown> = [
  null,
  [],
  "event",
  { ...base, id: "not-a-uuid" },
  { ...base, id: base.id.toUpperCase() },
  { ...base, id: undefined },
  { ...base, occurred: "not a date" },
  { ...base, occurred: "2026" },
  { ...base, occurred: "0000-12-31T23:59:59Z" },
  { ...base, occurred: "+010000-01-01T00:00:00Z" },
  { ...base, occurred: 1764226800000 },
  { ...base, event: 7 },
  { ...base, resource: {} },
  { ...base, resource: { "prefect.resource.id": "" } },
  { ...base, resource: { "prefect.resource.id": "x", other: 1 } },
  { ...base, resource: [] },
  { ...base, related: null },
  { ...base, related: {} },
  { ...base, related: [{ "prefect.resource.id": "x" }] },
  { ...base, related: [{ "prefect.resource.id": "x", "prefect.resource.role": "" }] },
  { ...base, related: [{ "prefect.resource.id": "", "prefect.resource.role": "r" }] },
  { ...base, payload: null },
  { ...base, payload: [] },
  { ...base, payload: "text" },
  { ...base, follows: "" },
  { ...base, follows: base.id },
  { ...base, follows: 3 },
  { ...base, unknown: "ignored" },
  { id: base.id, occurred: base.occurred, event: base.event, resource: base.resource }
].map((value) => JSON.parse(JSON.stringify(value)))

/** Keys JSON.parse makes own properties of and an object literal would not. */
const protoKeys: ReadonlyArray<string> = [
  `{"id":"${base.id}","occurred":"${base.occurred}","event":"e","resource":{"prefect.resource.id":"x","__proto__":"y"}}`,
  `{"id":"${base.id}","occurred":"${base.occurred}","event":"e","resource":{"prefect.resource.id":"x"},"payload":{"__proto__":{"a":1}}}`,
  `{"id":"${base.id}","occurred":"${base.occurred}","event":"e","resource":{"prefect.resource.id":"x"},"related":[{"prefect.resource.id":"x","prefect.resource.role":"r","__proto__":"z"}]}`
]

describe("decoding events of the plain shape", () => {
  it("takes generated events as Schema decodes them, nearly all of them", () => {
    const samples = wireSamples(Event, 400, 7)
    const taken = samples.filter(agrees).length
    expect(samples.length).toBeGreaterThan(300)
    // What it leaves is rare shapes (a `__proto__` label), not ordinary events.
    expect(taken / samples.length).toBeGreaterThan(0.95)
  })

  it("takes the shape clients send, and leaves every near miss it cannot decode exactly as Schema does", () => {
    expect(agrees(JSON.parse(JSON.stringify(base)))).toBe(true)
    for (const input of nearMisses) {
      const plain = decodePlainEvent(input)
      const decoded = decodeWithSchema(input)
      if (plain === undefined) continue
      expect(Either.isRight(decoded), JSON.stringify(input)).toBe(true)
      expect(plain).toEqual(Either.getOrThrow(decoded))
    }
    // The ones Schema refuses, the plain decoder leaves to it.
    const refused = nearMisses.filter((input) => Either.isLeft(decodeWithSchema(input)))
    expect(refused.length).toBeGreaterThan(15)
    for (const input of refused) expect(decodePlainEvent(input), JSON.stringify(input)).toBeUndefined()
    for (const text of protoKeys) expect(decodePlainEvent(JSON.parse(text)), text).toBeUndefined()
  })

  it("agrees with Schema on events with a field replaced by any JSON value", () => {
    const fields = ["id", "occurred", "event", "resource", "related", "payload", "follows"] as const
    fc.assert(
      fc.property(fc.constantFrom(...fields), fc.jsonValue(), (field, value) => {
        const input = JSON.parse(JSON.stringify({ ...base, [field]: value }))
        const plain = decodePlainEvent(input)
        const decoded = decodeWithSchema(input)
        if (plain === undefined) return true
        return Either.isRight(decoded) && JSON.stringify(plain) === JSON.stringify(decoded.right)
      }),
      { numRuns: 2000, seed: 11 }
    )
  })
})

describe("the bound on an event's serialised size", () => {
  const received = new Date("2026-11-27T07:00:01.000Z")
  /** Serialised as received (what the limit measures), and the bound from the text's UTF-8 bytes. */
  const sizes = (text: string) => {
    const decoded = Either.getOrThrow(decodeWithSchema(JSON.parse(text)))
    return { size: Buffer.byteLength(JSON.stringify({ ...decoded, received })), bound: serialisedAtMost(Buffer.byteLength(text)) }
  }

  it("holds for the texts that grow the most: the shortest fields, numbers written short, escapes", () => {
    const shortest = `{"id":"${base.id}","occurred":"1","event":"","resource":{"prefect.resource.id":"x"}}`
    const numbers = `{"id":"${base.id}","occurred":"1","event":"","resource":{"prefect.resource.id":"x"},"payload":{"a":[${Array(2000).fill("1e20").join(",")}]}}`
    const escapes = `{"id":"${base.id}","occurred":"1","event":"\\u0001\\ud800\\u00e9","resource":{"prefect.resource.id":"\\"\\\\"}}`
    for (const text of [shortest, numbers, escapes]) {
      const { bound, size } = sizes(text)
      expect(size).toBeLessThanOrEqual(bound)
    }
    // Numbers written short do grow: the bound is not loose by construction.
    const grown = sizes(numbers)
    expect(grown.size).toBeGreaterThan(4 * Buffer.byteLength(numbers))
  })

  it("holds for generated events, written with any whitespace", () => {
    for (const sample of wireSamples(Event, 300, 5)) {
      for (const text of [JSON.stringify(sample), JSON.stringify(sample, null, 1)]) {
        const { bound, size } = sizes(text)
        expect(size).toBeLessThanOrEqual(bound)
      }
    }
  })
})
