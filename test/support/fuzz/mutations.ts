/**
 * Invalid inputs made from valid ones: a valid JSON value with one place changed the way a careless
 * or hostile client would change it (a wrong type, null, an extra field, a huge string, deep
 * nesting, odd unicode, a negative or enormous number, a malformed UUID or date), or a body that is
 * not even the right kind of JSON. Every choice comes from a seeded generator, so a case is
 * reproduced by its seed.
 */

/** A small seeded generator (mulberry32): the same seed gives the same cases. */
export const seeded = (seed: number) => {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (n: number) => Math.floor(next() * n)
  const pick = <A>(values: ReadonlyArray<A>): A => values[int(values.length)]!
  return { next, int, pick }
}
export type Random = ReturnType<typeof seeded>

type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }
type Path = ReadonlyArray<string | number>

/**
 * Numbers JSON.stringify cannot write (1e400 is Infinity to JavaScript, -0 is 0) stand in a value
 * as a marker string and are spliced into the text.
 */
const RAW = "\u0001raw:"
const raw = (text: string) => `${RAW}${text}`
export const toText = (value: unknown): string =>
  JSON.stringify(value).replace(new RegExp(`"${RAW}([^"]*)"`, "g"), (_, text: string) => text)

/** Every place in a value, the root first, with the value there. */
const places = (value: Json): Array<readonly [Path, Json]> => {
  const out: Array<readonly [Path, Json]> = []
  const visit = (path: Path, v: Json) => {
    out.push([path, v])
    if (Array.isArray(v)) v.forEach((item, i) => visit([...path, i], item))
    else if (v !== null && typeof v === "object") for (const [k, item] of Object.entries(v)) visit([...path, k], item)
  }
  visit([], value)
  return out
}

/** An array or an object, indexed by a step of a path. */
type Container = { [key: string | number]: Json }

const setAt = (root: Json, path: Path, value: Json): Json => {
  if (path.length === 0) return value
  const copy = structuredClone(root)
  // The path comes from `places` of this value: every step before the last is an array or an object.
  let node = copy as Container
  for (const key of path.slice(0, -1)) node = node[key] as Container
  node[path[path.length - 1]!] = value
  return copy
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const DATE = /^\d{4}-\d{2}-\d{2}/

const WEIRD_TEXT = [
  "\u0000",
  "a\u0000b",
  "\ud800",
  "tail\udfff",
  "😀🚀👩‍👩‍👧‍👦",
  "\u202eevil\u202c",
  "\ufeffbom",
  "e\u0301\u0301\u0301",
  "ｆｕｌｌｗｉｄｔｈ",
  "𝕳𝖊𝖑𝖑𝖔",
  "'; DROP TABLE flow; --",
  "{{ 7 * 7 }}",
  "../../etc/passwd",
  "%00%2F%2e%2e",
  "\\u0000",
  " ",
  ""
]

const MALFORMED_UUIDS = [
  "not-a-uuid",
  "00000000-0000-0000-0000-00000000000g",
  "0b6f3a52-1c7e-4d35-9a4e-6f1d2c3b4a5",
  "{0b6f3a52-1c7e-4d35-9a4e-6f1d2c3b4a59}",
  "0b6f3a521c7e4d359a4e6f1d2c3b4a59ff",
  "",
  "0b6f3a52-1c7e-4d35-9a4e-6f1d2c3b4a59\u0000"
]

const MALFORMED_DATES = [
  "2026-13-45T25:61:00Z",
  "yesterday",
  "0000-00-00T00:00:00Z",
  "+275760-09-13T00:00:00Z",
  "-000001-01-01T00:00:00Z",
  "9999-12-31T23:59:59.999999+14:00",
  "0001-01-01T00:00:00-14:00",
  "2026-02-30",
  "2026-11-25T10:00:00+25:00",
  "1e400"
]

const NEGATIVE_NUMBERS = [-1, -0.5, -(2 ** 31), -(2 ** 53) - 2, -1e308, raw("-0"), raw("-1e400")]
const HUGE_NUMBERS = [2 ** 31, 2 ** 53 + 2, 2 ** 64, 1e308, raw("1e400"), raw("123456789012345678901234567890"), 0.1 + 0.2]

/**
 * A value of another JSON type. Some are still valid where the reference reads lax (0 or 1 for a
 * boolean, true for a number): the judge asks only that a request be answered well, and that a
 * refused one change nothing, not that every mutation be refused.
 */
const otherTypeThan = (random: Random, value: Json): Json => {
  const candidates: Array<Json> = [0, 1.5, "text", true, [], {}, [1, "two", null], { nested: { value: 1 } }]
  const kind = (v: Json) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v)
  return random.pick(candidates.filter((c) => kind(c) !== kind(value)))
}

const nested = (random: Random, depth: number): Json => {
  let value: Json = random.pick<Json>(["leaf", 1, null])
  for (let i = 0; i < depth; i++) value = random.next() < 0.5 ? [value] : { k: value }
  return value
}

/** One invalid change to a value: its name and the JSON text to send. */
export interface Mutation {
  readonly name: string
  readonly text: string
}

type Mutator = (random: Random, value: Json) => Json | undefined

const atRandomPlace = (random: Random, value: Json, predicate: (v: Json) => boolean, change: (v: Json) => Json) => {
  const candidates = places(value).filter(([, v]) => predicate(v))
  if (candidates.length === 0) return undefined
  const [path, v] = random.pick(candidates)
  return setAt(value, path, change(v))
}

const anything = () => true
const isObject = (v: Json) => v !== null && typeof v === "object" && !Array.isArray(v)

const MUTATORS: Record<string, Mutator> = {
  "wrong type": (random, value) => atRandomPlace(random, value, anything, (v) => otherTypeThan(random, v)),
  "null": (random, value) => atRandomPlace(random, value, (v) => v !== null, () => null),
  "extra field": (random, value) =>
    atRandomPlace(random, value, isObject, (v) => ({
      ...(v as object),
      [random.pick(["unexpected", "__proto__", "constructor", "id", "created", "😀", "a".repeat(300)])]: random.pick<Json>([1, "x", null, {}])
    })),
  "huge string": (random, value) =>
    atRandomPlace(random, value, anything, () => random.pick(["x", "é", "😀", "\\"]).repeat(random.pick([5_000, 70_000, 300_000]))),
  "deep nesting": (random, value) => atRandomPlace(random, value, anything, () => nested(random, random.pick([40, 300, 990, 1_200]))),
  "unicode": (random, value) =>
    atRandomPlace(random, value, (v) => typeof v === "string" || isObject(v), (v) =>
      typeof v === "string"
        ? random.pick(WEIRD_TEXT)
        : { ...(v as object), [random.pick(WEIRD_TEXT)]: random.pick<Json>([random.pick(WEIRD_TEXT), 1]) }),
  "negative number": (random, value) =>
    atRandomPlace(random, value, (v) => typeof v === "number", () => random.pick(NEGATIVE_NUMBERS)) ??
      atRandomPlace(random, value, anything, () => random.pick(NEGATIVE_NUMBERS)),
  "huge number": (random, value) =>
    atRandomPlace(random, value, (v) => typeof v === "number", () => random.pick(HUGE_NUMBERS)) ??
      atRandomPlace(random, value, anything, () => random.pick(HUGE_NUMBERS)),
  "malformed uuid": (random, value) =>
    atRandomPlace(random, value, (v) => typeof v === "string" && UUID.test(v), () => random.pick(MALFORMED_UUIDS)),
  "malformed date": (random, value) =>
    atRandomPlace(random, value, (v) => typeof v === "string" && DATE.test(v), () => random.pick(MALFORMED_DATES)),
  "wrong root": (random) => random.pick<Json>([[], "body", 0, null, true, [{}]])
}

/** Mutations of a body that are not JSON values at all. */
const TEXT_MUTATORS: Record<string, (random: Random, text: string) => string> = {
  "truncated json": (random, text) => text.slice(0, Math.max(1, random.int(text.length))),
  "trailing garbage": (random, text) => text + random.pick(["}", ",", " x", "\u0000"]),
  "empty body": () => ""
}

export const MUTATION_NAMES = [...Object.keys(MUTATORS), ...Object.keys(TEXT_MUTATORS)]

/**
 * An invalid variant of `value` (a body or a query as JSON). Mutations that find nothing to change
 * (no UUID to break, say) give way to the next one.
 */
export const mutate = (random: Random, value: unknown, options: { readonly textual: boolean }): Mutation => {
  const names = options.textual ? MUTATION_NAMES : Object.keys(MUTATORS)
  const start = random.int(names.length)
  for (let i = 0; i < names.length; i++) {
    const name = names[(start + i) % names.length]!
    const text = TEXT_MUTATORS[name]
    if (text !== undefined) return { name, text: text(random, JSON.stringify(value)) }
    const changed = MUTATORS[name]!(random, value as Json)
    if (changed !== undefined) return { name, text: toText(changed) }
  }
  return { name: "wrong root", text: "null" }
}

/** A value as a URL component; an unpaired surrogate (which has no UTF-8 form) as its CESU-8 bytes. */
export const encodeComponent = (value: string): string => {
  try {
    return encodeURIComponent(value)
  } catch {
    return value.split("").map((c) => {
      try {
        return encodeURIComponent(c)
      } catch {
        return "%ED%A0%80"
      }
    }).join("")
  }
}

/** Path parameter values, already encoded, that a route must refuse or not find. */
export const hostileSegment = (random: Random): string =>
  random.pick([
    ...[...MALFORMED_UUIDS.filter((s) => s !== ""), "x".repeat(random.pick([300, 5_000])), "😀", "\u0000", "\ud800", "../..", " ", "-1", "1e400"].map(
      encodeComponent
    ),
    "%zz",
    "%00",
    "%ED%A0%80",
    // (Not `%2e%2e`: URL parsing on the client turns it into `..` and the path into another route's.)
    "%2F"
  ])

export type Query = ReadonlyArray<readonly [string, string]>

const QUERY_VALUES = [
  ...WEIRD_TEXT,
  ...MALFORMED_UUIDS,
  ...MALFORMED_DATES,
  "-1",
  "-9223372036854775809",
  "1e400",
  "NaN",
  "Infinity",
  "0.5",
  "true",
  "null",
  "[]",
  "{}"
]

/** An invalid variant of a query string: a value replaced, a key added or repeated, or all dropped. */
export const mutateQuery = (random: Random, query: Query): { readonly name: string; readonly query: Query } => {
  const value = () => (random.next() < 0.1 ? "q".repeat(random.pick([5_000, 20_000])) : random.pick(QUERY_VALUES))
  const choice = query.length === 0 ? random.pick(["extra key", "repeated key"]) : random.pick(["bad value", "bad value", "extra key", "repeated key", "no parameters"])
  switch (choice) {
    case "bad value": {
      const i = random.int(query.length)
      return { name: "query: bad value", query: query.map(([k, v], j) => [k, j === i ? value() : v] as const) }
    }
    case "extra key":
      return { name: "query: extra key", query: [...query, [random.pick(["unexpected", "limit", "offset", "__proto__", "😀", "a\u0000"]), value()]] }
    case "repeated key": {
      const key = query.length > 0 ? random.pick(query)[0] : "limit"
      return { name: "query: repeated key", query: [...query, [key, value()], [key, value()]] }
    }
    default:
      return { name: "query: no parameters", query: [] }
  }
}
