/**
 * From ajv's errors to the problems the reference's validator (python-jsonschema) reports, nested by
 * property and list index as the reference's UI endpoint answers them: the failing branches of
 * anyOf, oneOf and contains left out (only the keyword's own problem counts), additionalProperties
 * naming every extra property at once, a placeholder's problem replacing the others at its place,
 * and the problems in the order the reference finds them (the schema's keywords in order, properties
 * in the schema's order, items in order), grouped by place. Also the walking of schemas both need.
 */
import type { ErrorObject } from "ajv"
import { messageOf, pythonRepr } from "./json-schema.ts"
import { placeholderOf } from "./parameters.ts"
import { patternMatches, patternProblem } from "./regex.ts"
import { isObject } from "./schemas.ts"
import { trim } from "./strings.ts"

type JsonSchema = Record<string, unknown>

/** One problem's place: a property name, or a list index. */
type Part = string | number

export interface PropertyProblems {
  readonly property: string
  readonly errors: Array<Problems>
}
export interface IndexProblems {
  readonly index: number
  readonly errors: Array<Problems>
}
export type Problems = string | PropertyProblems | IndexProblems

/** Checked wherever a schema applies to a value: the problem of a placeholder standing there. */
export const PLACEHOLDER = "x-baton-placeholder"

export const asList = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

/**
 * Whether a string is a regular expression (JSON Schema's `format: regex`, checked on the schema's
 * patterns and on values): compiled by JavaScript without the `u` flag, the lenient way, and never
 * run. Patterns are run with RE2 (regex.ts).
 */
export const isRegex = (value: string) => {
  try {
    new RegExp(value)
    return true
  } catch {
    return false
  }
}

/** Whether RE2 runs the pattern (the validator was compiled with it, so it does). */
const usable = (pattern: string) => patternProblem(pattern) === undefined

/** Where a schema holds schemas: one, a list of them, or a map of them. */
const ONE = new Set([
  "additionalProperties",
  "additionalItems",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contentSchema"
])
const LIST = new Set(["allOf", "anyOf", "oneOf", "prefixItems"])
const MAP = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"])

/** Every schema object in `schema` (itself included), each once. */
export const schemaObjects = (schema: unknown): Array<JsonSchema> => {
  const seen = new Set<JsonSchema>()
  const visit = (node: unknown) => {
    if (!isObject(node) || seen.has(node)) return
    seen.add(node)
    for (const [keyword, value] of Object.entries(node)) {
      if (ONE.has(keyword)) visit(value)
      else if (LIST.has(keyword)) asList(value).forEach(visit)
      else if (keyword === "items") Array.isArray(value) ? value.forEach(visit) : visit(value)
      else if (MAP.has(keyword) && isObject(value)) Object.values(value).forEach(visit)
    }
  }
  visit(schema)
  return [...seen]
}

const unescape = (part: string) => part.replace(/~1/g, "/").replace(/~0/g, "~")
const escape = (part: string) => part.replace(/~/g, "~0").replace(/\//g, "~1")

/** What a local `$ref` ("#", "#/a/b") points to in `root`; undefined when nothing. */
export const resolve = (root: unknown, ref: string): unknown => {
  if (ref === "#" || ref === "") return root
  if (!ref.startsWith("#/")) return undefined
  let node = root
  for (const raw of ref.slice(2).split("/")) {
    let part: string
    try {
      part = unescape(decodeURIComponent(raw))
    } catch {
      return undefined
    }
    if (Array.isArray(node) && /^\d+$/.test(part)) node = node[Number(part)]
    else if (isObject(node) && Object.hasOwn(node, part)) node = node[part]
    else return undefined
  }
  return node
}

/** Keywords whose subschemas' problems are not reported (only the keyword's own). */
const COMPOSITE = new Set(["anyOf", "oneOf", "contains"])
/** ajv's summaries of problems already reported on their own. */
const SUMMARIES = new Set(["if", "propertyNames"])

const within = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`)

/**
 * The errors without the failing branches of composite keywords: ajv reports a branch's problems
 * just before the keyword's own, at or under the same value. `inBranch` says whether an earlier
 * error comes from the composite keyword's subschemas.
 */
export const withoutBranches = (
  errors: ReadonlyArray<ErrorObject>,
  inBranch: (composite: ErrorObject, earlier: ErrorObject) => boolean
): Array<ErrorObject> => {
  const dropped = new Set<number>()
  errors.forEach((error, i) => {
    if (SUMMARIES.has(error.keyword)) dropped.add(i)
    if (!COMPOSITE.has(error.keyword)) return
    for (let j = i - 1; j >= 0; j--) {
      const earlier = errors[j]!
      if (!within(earlier.instancePath, error.instancePath) || !inBranch(error, earlier)) break
      dropped.add(j)
    }
  })
  return errors.filter((_, i) => !dropped.has(i))
}

/** Without the schema objects: an earlier error from another schema object than the keyword's is a branch's. */
export const fromOtherSchema = (composite: ErrorObject, earlier: ErrorObject) => earlier.parentSchema !== composite.parentSchema

/** Every schema object reachable from `schema` in `root`, local `$ref`s followed. */
const reachable = (root: JsonSchema, schema: unknown): Set<JsonSchema> => {
  const found = new Set<JsonSchema>()
  const pending = Array.isArray(schema) ? [...schema] : [schema]
  while (pending.length > 0) {
    for (const object of schemaObjects(pending.pop())) {
      if (found.has(object)) continue
      found.add(object)
      if (typeof object.$ref === "string") pending.push(resolve(root, object.$ref))
    }
  }
  return found
}

/** ajv's error per extra property as the reference's one error naming them all (sorted). */
export const mergeAdditional = (errors: ReadonlyArray<ErrorObject>): Array<ErrorObject> => {
  const out: Array<ErrorObject> = []
  const merged = new Map<string, { error: ErrorObject; extras: Array<string> }>()
  for (const error of errors) {
    if (error.keyword !== "additionalProperties") {
      out.push(error)
      continue
    }
    const key = `${error.instancePath} ${error.schemaPath}`
    const extra = String((error.params as { additionalProperty?: unknown }).additionalProperty)
    const existing = merged.get(key)
    if (existing !== undefined) {
      existing.extras.push(extra)
      continue
    }
    const entry = { error: { ...error }, extras: [extra] }
    merged.set(key, entry)
    out.push(entry.error)
  }
  for (const { error, extras } of merged.values()) {
    const sorted = [...extras].sort()
    const names = sorted.map((e) => pythonRepr(e)).join(", ")
    const patterns = isObject(error.parentSchema) && isObject(error.parentSchema.patternProperties)
      ? Object.keys(error.parentSchema.patternProperties).sort()
      : undefined
    error.message = patterns !== undefined
      ? `${names} ${sorted.length === 1 ? "does" : "do"} not match any of the regexes: ${patterns.map((p) => pythonRepr(p)).join(", ")}`
      : `Additional properties are not allowed (${names} ${sorted.length === 1 ? "was" : "were"} unexpected)`
  }
  return out
}

export const wordingOf = (error: ErrorObject) =>
  error.keyword === PLACEHOLDER || error.keyword === "additionalProperties" ? error.message ?? "" : messageOf(error)

/** An instance path ("/a/0") as the reference's parts: list indexes as numbers. */
const partsOf = (data: unknown, instancePath: string): Array<Part> => {
  const parts: Array<Part> = []
  let node = data
  for (const raw of instancePath === "" ? [] : instancePath.slice(1).split("/")) {
    const part = unescape(raw)
    if (Array.isArray(node)) {
      parts.push(Number(part))
      node = node[Number(part)]
    } else {
      parts.push(part)
      node = isObject(node) ? node[part] : undefined
    }
  }
  return parts
}

/**
 * For each schema object and the value it applies to (by instance path), the route the reference's
 * validator takes to it: at each schema, the index of the keyword it goes through (the schema's own
 * order) and of the subschema, property or item. Comparing routes orders problems as it finds them.
 */
const routesOf = (root: JsonSchema, data: unknown) => {
  const routes = new Map<object, Map<string, ReadonlyArray<number>>>()
  const visit = (schema: unknown, value: unknown, at: string, route: ReadonlyArray<number>) => {
    if (!isObject(schema)) return
    let byPath = routes.get(schema)
    if (byPath === undefined) routes.set(schema, byPath = new Map())
    if (byPath.has(at)) return
    byPath.set(at, route)
    const child = (key: string | number) => `${at}/${escape(String(key))}`
    const object = isObject(value) && placeholderOf(value) === undefined ? value : undefined
    const list = Array.isArray(value) ? value : undefined
    Object.entries(schema).forEach(([keyword, sub], k) => {
      const here = [...route, k]
      if (keyword === "$ref" && typeof sub === "string") visit(resolve(root, sub), value, at, here)
      else if (keyword === "allOf" || keyword === "anyOf" || keyword === "oneOf") {
        asList(sub).forEach((s, i) => visit(s, value, at, [...here, i]))
      } else if (keyword === "not" || keyword === "if" || keyword === "then" || keyword === "else") visit(sub, value, at, here)
      else if (keyword === "propertyNames") visit(sub, undefined, at, here)
      else if (keyword === "dependentSchemas" && isObject(sub) && object) {
        Object.keys(sub).forEach((name, i) => Object.hasOwn(object, name) && visit(sub[name], value, at, [...here, i]))
      } else if (keyword === "properties" && isObject(sub) && object) {
        Object.keys(sub).forEach((name, i) => Object.hasOwn(object, name) && visit(sub[name], object[name], child(name), [...here, i]))
      } else if (keyword === "patternProperties" && isObject(sub) && object) {
        Object.keys(sub).forEach((pattern, i) => {
          if (!usable(pattern)) return
          Object.keys(object).forEach((name, j) => patternMatches(pattern, name) && visit(sub[pattern], object[name], child(name), [...here, i, j]))
        })
      } else if (keyword === "additionalProperties" && object) {
        const known = isObject(schema.properties) ? schema.properties : {}
        const patterns = isObject(schema.patternProperties) ? Object.keys(schema.patternProperties).filter(usable) : []
        Object.keys(object).forEach((name, j) => {
          if (Object.hasOwn(known, name) || patterns.some((p) => patternMatches(p, name))) return
          visit(sub, object[name], child(name), [...here, j])
        })
      } else if (keyword === "prefixItems" && list) {
        asList(sub).forEach((s, i) => i < list.length && visit(s, list[i], child(i), [...here, i]))
      } else if (keyword === "items" && list) {
        if (Array.isArray(sub)) sub.forEach((s, i) => i < list.length && visit(s, list[i], child(i), [...here, i]))
        else {
          const from = asList(schema.prefixItems).length
          list.forEach((item, i) => i >= from && visit(sub, item, child(i), [...here, i]))
        }
      } else if (keyword === "contains" && list) list.forEach((item, i) => visit(sub, item, child(i), [...here, i]))
    })
  }
  visit(root, data, "", [])
  return routes
}

const LAST: ReadonlyArray<number> = [Number.MAX_SAFE_INTEGER]

const compareRoutes = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return a.length - b.length
}

/** The reference's nesting of problems: by property and index, a place's messages in order. */
const nest = (problems: ReadonlyArray<{ readonly path: ReadonlyArray<Part>; readonly message: string }>): Array<Problems> => {
  const errors: Array<Problems> = []
  for (const problem of problems) {
    const path = [...problem.path]
    let current = errors
    if (path.length === 0) current.push(problem.message)
    while (path.length > 0) {
      const part = path.shift()!
      const last = path.length === 0
      const entry = last
        ? undefined
        : current.find((e): e is PropertyProblems | IndexProblems =>
          typeof e === "object" && (typeof part === "number" ? (e as IndexProblems).index === part : (e as PropertyProblems).property === part)
        )
      if (entry !== undefined) {
        current = entry.errors
        continue
      }
      const created = typeof part === "number"
        ? { index: part, errors: last ? [problem.message] : [] }
        : { property: part, errors: last ? [problem.message] : [] }
      current.push(created)
      current = created.errors
    }
  }
  return errors
}

/** The problems of ajv's errors, as the reference reports them. */
export const problemsOf = (root: JsonSchema, data: unknown, raw: ReadonlyArray<ErrorObject>): Array<Problems> => {
  const routes = routesOf(root, data)
  const schemaOf = (error: ErrorObject): unknown =>
    error.parentSchema ?? resolve(root, error.schemaPath.slice(0, error.schemaPath.lastIndexOf("/")))
  const branches = new Map<ErrorObject, Set<JsonSchema>>()
  const inBranch = (composite: ErrorObject, earlier: ErrorObject) => {
    let schemas = branches.get(composite)
    if (schemas === undefined) branches.set(composite, schemas = reachable(root, composite.schema))
    const schema = schemaOf(earlier)
    return isObject(schema) && schemas.has(schema)
  }
  const keyOf = (error: ErrorObject) => {
    const schema = schemaOf(error)
    if (!isObject(schema)) return LAST
    const route = routes.get(schema)?.get(error.instancePath)
    if (route === undefined) return LAST
    const index = Object.keys(schema).indexOf(error.keyword)
    return [...route, index === -1 ? Object.keys(schema).length : index]
  }
  const errors = mergeAdditional(withoutBranches(raw, inBranch))
    // A value not known yet (an unrendered template) is not checked.
    .filter((e) => e.keyword === PLACEHOLDER || placeholderOf(e.data)?.problem !== null)
    .map((error, order) => ({ error, order, key: keyOf(error), path: partsOf(data, error.instancePath) }))
    .sort((a, b) => compareRoutes(a.key, b.key) || a.order - b.order)
  // By place, in the order each place first had a problem; a placeholder's problem stands alone.
  const byPlace = new Map<string, Array<(typeof errors)[number]>>()
  for (const e of errors) {
    const place = JSON.stringify(e.path)
    byPlace.set(place, [...(byPlace.get(place) ?? []), e])
  }
  const ordered = [...byPlace.values()].flatMap((group) => {
    const placeholders = group.filter((e) => e.error.keyword === PLACEHOLDER)
    return placeholders.length > 0 ? placeholders : group
  })
  return nest(
    ordered.map(({ error, path }) => {
      const message = wordingOf(error)
      // A missing property's problem is the property's: the first word of the message, unquoted.
      return { path: error.keyword === "required" ? [...path, trim(message.split(" ")[0]!, "'")] : path, message }
    })
  )
}
