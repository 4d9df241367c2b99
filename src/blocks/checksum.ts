/**
 * Block schema checksums, computed the way clients compute them (so a client's
 * `GET /block_schemas/checksum/{checksum}` finds the schema it registered): SHA-256 of the fields
 * without their secret_fields and block definitions, serialised as Python's
 * `json.dumps(((fields,), {}), sort_keys=True)` prints it.
 */
import { createHash } from "node:crypto"
import { isObject } from "../domain/schemas.ts"

/** Python's repr of a float that is not an integer: shortest round-trip digits, exponent outside 1e-4 ≤ |x| < 1e16. */
const pythonFloat = (x: number): string => {
  if (Number.isNaN(x)) return "NaN"
  if (!Number.isFinite(x)) return x > 0 ? "Infinity" : "-Infinity"
  const [mantissa, exp] = x.toExponential().split("e") as [string, string]
  const exponent = Number(exp)
  if (exponent >= -4 && exponent < 16) {
    const text = String(x)
    // JS prints 1e-7 style for tiny numbers only; within this range String() is positional.
    return text.includes(".") || text.includes("e") ? text : `${text}.0`
  }
  const sign = exponent < 0 ? "-" : "+"
  return `${mantissa}e${sign}${String(Math.abs(exponent)).padStart(2, "0")}`
}

const pythonNumber = (x: number): string => (Number.isInteger(x) && Math.abs(x) < 1e21 ? x.toFixed(0) : pythonFloat(x))

/** A string as Python's json.dumps writes it with ensure_ascii: everything outside space..~ escaped. */
const pythonString = (s: string): string => {
  let out = '"'
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i)
    const ch = s[i]!
    if (ch === '"') out += '\\"'
    else if (ch === "\\") out += "\\\\"
    else if (ch === "\n") out += "\\n"
    else if (ch === "\r") out += "\\r"
    else if (ch === "\t") out += "\\t"
    else if (ch === "\b") out += "\\b"
    else if (ch === "\f") out += "\\f"
    else if (code < 0x20 || code > 0x7e) out += `\\u${code.toString(16).padStart(4, "0")}`
    else out += ch
  }
  return out + '"'
}

/** Code-point order, as Python sorts str keys. */
const byCodePoint = (a: string, b: string): number => {
  const ca = Array.from(a)
  const cb = Array.from(b)
  for (let i = 0; i < Math.min(ca.length, cb.length); i++) {
    const d = ca[i]!.codePointAt(0)! - cb[i]!.codePointAt(0)!
    if (d !== 0) return d
  }
  return ca.length - cb.length
}

/** `json.dumps(value, sort_keys=True)` with Python's default separators. */
export const pythonJson = (value: unknown): string => {
  if (value === null || value === undefined) return "null"
  if (value === true) return "true"
  if (value === false) return "false"
  if (typeof value === "number") return pythonNumber(value)
  if (typeof value === "string") return pythonString(value)
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(", ")}]`
  if (isObject(value)) {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort(byCodePoint)
    return `{${keys.map((k) => `${pythonString(k)}: ${pythonJson(value[k])}`).join(", ")}}`
  }
  return pythonString(String(value))
}

/** Every `$ref` string in `value`, depth first. */
export const collectRefs = (value: unknown, out: Array<string> = []): Array<string> => {
  if (Array.isArray(value)) for (const item of value) collectRefs(item, out)
  else if (isObject(value)) {
    if (typeof value.$ref === "string" && value.$ref !== "") out.push(value.$ref)
    for (const v of Object.values(value)) collectRefs(v, out)
  }
  return out
}

export const definitionKey = (ref: string) => ref.replace("#/definitions/", "")

/**
 * The definitions `value` reaches that are not blocks (blocks are schemas of their own), with what
 * those reach in turn.
 */
export const nonBlockDefinitions = (
  value: unknown,
  definitions: Readonly<Record<string, unknown>>,
  seen: Set<string> = new Set()
): Record<string, unknown> => {
  let found: Record<string, unknown> = {}
  for (const ref of collectRefs(value)) {
    const key = definitionKey(ref)
    const definition = definitions[key]
    if (!isObject(definition) || Object.keys(definition).length === 0) continue
    if (definition.block_type_slug !== undefined && definition.block_type_slug !== null) continue
    if (seen.has(key)) {
      found = { ...found, [key]: definition }
      continue
    }
    seen.add(key)
    found = { ...found, [key]: definition, ...nonBlockDefinitions(definition, definitions, seen) }
  }
  return found
}

/** A deep copy of `value` without any `secret_fields` key of an object (lists are copied as they are). */
const withoutSecretFields = (value: unknown): unknown => {
  if (!isObject(value)) return value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) if (k !== "secret_fields") out[k] = withoutSecretFields(v)
  return out
}

/** The checksum of a block schema's fields: `sha256:<hex>`. */
export const blockSchemaChecksum = (fields: Readonly<Record<string, unknown>>): string => {
  const hashed = withoutSecretFields(fields) as Record<string, unknown>
  if (isObject(hashed.definitions) && Object.keys(hashed.definitions).length > 0) {
    const kept = nonBlockDefinitions(hashed, hashed.definitions)
    if (Object.keys(kept).length > 0) hashed.definitions = kept
    else delete hashed.definitions
  }
  const payload = `[[${pythonJson(hashed)}], {}]`
  return `sha256:${createHash("sha256").update(payload, "utf8").digest("hex")}`
}
