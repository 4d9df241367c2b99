/**
 * Secret fields of block data. A schema's `secret_fields` lists dotted paths ("password",
 * "credentials.token") and wildcard paths ("headers.*": everything under headers). Reads show each
 * secret as "********" unless secrets are asked for; an update that sends "********" back for a
 * secret keeps the stored value.
 */
import { isObject } from "../domain/schemas.ts"

export const OBFUSCATED = "********"

type Data = Record<string, unknown>

/** The secret paths of a schema's fields, split into their keys. */
export const secretPaths = (fields: Readonly<Record<string, unknown>>): ReadonlyArray<ReadonlyArray<string>> =>
  Array.isArray(fields.secret_fields)
    ? fields.secret_fields.filter((p): p is string => typeof p === "string" && p !== "").map((p) => p.split("."))
    : []

/** The object at `keys` below `data`, or undefined. */
const objectAt = (data: Data, keys: ReadonlyArray<string>): Data | undefined => {
  let node: unknown = data
  for (const key of keys) {
    if (!isObject(node)) return undefined
    node = node[key]
  }
  return isObject(node) ? node : undefined
}

/** Calls `visit` with the parent and key of every leaf below `node` (an empty object is a leaf). */
const eachLeaf = (node: Data, visit: (parent: Data, key: string) => void) => {
  for (const [key, value] of Object.entries(node)) {
    if (isObject(value) && Object.keys(value).length > 0) eachLeaf(value, visit)
    else visit(node, key)
  }
}

/** A copy of `data` with every secret replaced by "********". */
export const obfuscateSecrets = (data: Data, paths: ReadonlyArray<ReadonlyArray<string>>): Data => {
  if (paths.length === 0) return data
  const copy = structuredClone(data)
  for (const path of paths) {
    const wildcard = path.indexOf("*")
    if (wildcard >= 0) {
      const under = objectAt(copy, path.slice(0, wildcard))
      if (under !== undefined) eachLeaf(under, (parent, key) => (parent[key] = OBFUSCATED))
      continue
    }
    const parent = objectAt(copy, path.slice(0, -1))
    const key = path[path.length - 1]!
    if (parent !== undefined && parent[key] !== null && parent[key] !== undefined) parent[key] = OBFUSCATED
  }
  return copy
}

/**
 * `incoming` with every "********" that stands for a stored secret replaced by the stored value, so
 * that sending back what a read showed changes no secret.
 */
export const restoreSecrets = (incoming: Data, stored: Data, paths: ReadonlyArray<ReadonlyArray<string>>): Data => {
  if (paths.length === 0) return incoming
  const copy = structuredClone(incoming)
  for (const path of paths) {
    const wildcard = path.indexOf("*")
    if (wildcard >= 0) {
      const prefix = path.slice(0, wildcard)
      const under = objectAt(copy, prefix)
      if (under === undefined) continue
      const storedUnder = objectAt(stored, prefix)
      const walk = (node: Data, original: Data | undefined) => {
        for (const [key, value] of Object.entries(node)) {
          const previous = original?.[key]
          if (isObject(value)) walk(value, isObject(previous) ? previous : undefined)
          else if (value === OBFUSCATED && previous !== undefined) node[key] = structuredClone(previous)
        }
      }
      walk(under, storedUnder)
      continue
    }
    const parent = objectAt(copy, path.slice(0, -1))
    const storedParent = objectAt(stored, path.slice(0, -1))
    const key = path[path.length - 1]!
    const previous = storedParent?.[key]
    if (parent !== undefined && parent[key] === OBFUSCATED && previous !== null && previous !== undefined) {
      parent[key] = structuredClone(previous)
    }
  }
  return copy
}
