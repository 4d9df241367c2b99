/**
 * Validating values against JSON Schemas users store (run input schemas, parameter schemas), with
 * ajv. Failures are described the way the reference words them ("1 is not of type 'string'"), since
 * clients show and match those messages.
 */
import type { Ajv, ErrorObject, ValidateFunction } from "ajv"
import { memoize, onFirstUse } from "./on-first-use.ts"
import { regExpEngine } from "./regex.ts"
import { isObject } from "./schemas.ts"

const ajvPackage = onFirstUse<typeof import("ajv")>("ajv")

// Remote $refs are never fetched: ajv resolves only what the schema itself contains. Patterns run
// with RE2 (regex.ts), in linear time.
const ajv = memoize(
  () => new (ajvPackage().Ajv)({ allErrors: false, strict: false, validateFormats: false, verbose: true, code: { regExp: regExpEngine } })
)

export type SchemaCheck =
  | { readonly valid: true }
  /** `unusable`: the schema itself cannot be used (it does not compile, or a pattern RE2 cannot run). */
  | { readonly valid: false; readonly field: string | null; readonly message: string; readonly unusable?: true }

/** A string as Python's repr() prints it: single quotes unless it holds one and no double quote. */
const pythonString = (value: string): string => {
  const quote = value.includes("'") && !value.includes('"') ? '"' : "'"
  let out = ""
  for (const ch of value) {
    if (ch === "\\") out += "\\\\"
    else if (ch === quote) out += `\\${quote}`
    else if (ch === "\n") out += "\\n"
    else if (ch === "\r") out += "\\r"
    else if (ch === "\t") out += "\\t"
    else if (ch < " " || ch === "\x7f") out += `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`
    else out += ch
  }
  return quote + out + quote
}

/** A value as Python prints it (the reference's messages quote values that way). */
export const pythonRepr = (value: unknown): string => {
  if (value === null || value === undefined) return "None"
  if (value === true) return "True"
  if (value === false) return "False"
  if (typeof value === "string") return pythonString(value)
  if (typeof value === "number") return String(value)
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(", ")}]`
  if (typeof value === "object") {
    return `{${Object.entries(value as Record<string, unknown>).map(([k, v]) => `${pythonRepr(k)}: ${pythonRepr(v)}`).join(", ")}}`
  }
  return String(value)
}

const plural = (n: number, word: string) => (n === 1 ? word : `${word}s`)

/**
 * An ajv error worded as the reference's validator (python-jsonschema) words it. With ajv's `verbose`
 * option, `data` is the failing value and `schema` the keyword's value.
 */
export const messageOf = (error: ErrorObject): string => {
  const params = error.params as Record<string, unknown>
  const data = pythonRepr(error.data)
  const limit = Number(params.limit)
  switch (error.keyword) {
    case "required":
      return `${pythonRepr(String(params.missingProperty))} is a required property`
    case "type": {
      const types = Array.isArray(params.type) ? params.type : String(params.type).split(",")
      return `${data} is not of type ${types.map((t) => pythonRepr(String(t))).join(", ")}`
    }
    case "enum":
      return `${data} is not one of ${pythonRepr(params.allowedValues)}`
    case "const":
      return `${pythonRepr(params.allowedValue)} was expected`
    case "minimum":
      return `${data} is less than the minimum of ${String(params.limit)}`
    case "maximum":
      return `${data} is greater than the maximum of ${String(params.limit)}`
    case "exclusiveMinimum":
      return `${data} is less than or equal to the minimum of ${String(params.limit)}`
    case "exclusiveMaximum":
      return `${data} is greater than or equal to the maximum of ${String(params.limit)}`
    case "multipleOf":
      return `${data} is not a multiple of ${String(params.multipleOf)}`
    case "minLength":
    case "minItems":
      return `${data} ${limit === 1 ? "should be non-empty" : "is too short"}`
    case "maxLength":
    case "maxItems":
      return `${data} ${limit === 0 ? "is expected to be empty" : "is too long"}`
    case "minProperties":
      return `${data} ${limit === 1 ? "should be non-empty" : "does not have enough properties"}`
    case "maxProperties":
      return `${data} ${limit === 0 ? "is expected to be empty" : "has too many properties"}`
    case "uniqueItems":
      return `${data} has non-unique elements`
    case "pattern":
      return `${data} does not match ${pythonRepr(String(params.pattern))}`
    case "format":
      return `${data} is not a ${pythonRepr(String(params.format))}`
    case "additionalProperties":
      return `Additional properties are not allowed (${pythonRepr(String(params.additionalProperty))} was unexpected)`
    case "dependentRequired":
    case "dependencies":
      return `${pythonRepr(String(params.missingProperty))} is a dependency of ${pythonRepr(String(params.property))}`
    case "anyOf":
      return `${data} is not valid under any of the given schemas`
    case "oneOf": {
      const passing = params.passingSchemas
      if (Array.isArray(passing) && Array.isArray(error.schema)) {
        const schemas = error.schema as ReadonlyArray<unknown>
        return `${data} is valid under each of ${passing.map((i) => pythonRepr(schemas[i as number])).join(", ")}`
      }
      return `${data} is not valid under any of the given schemas`
    }
    case "not":
      return `${data} should not be valid under ${pythonRepr(error.schema)}`
    case "contains": {
      if (params.maxContains !== undefined) return `Too many items match the given schema (expected at most ${String(params.maxContains)})`
      const min = params.minContains === undefined ? 1 : Number(params.minContains)
      return min === 1
        ? `${data} does not contain items matching the given schema`
        : `Too few items match the given schema (expected at least ${min})`
    }
    case "items": {
      if (!Array.isArray(error.data)) return `${data} is not valid`
      const extra = error.data.length - limit
      const rest = extra === 1 ? error.data[limit] : error.data.slice(limit)
      return `Expected at most ${limit} ${plural(limit, "item")} but found ${extra} extra: ${pythonRepr(rest)}`
    }
    case "false schema":
      return `False schema does not allow ${data}`
    default:
      return `${data} ${error.message ?? "is not valid"}`
  }
}

/** The failing field as the reference names it: `a.b`, `a[0]`; null at the root. */
const fieldOf = (error: ErrorObject): string | null => {
  const parts = error.instancePath.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
  if (parts.length === 0) return null
  return parts.reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path === "" ? part : `${path}.${part}`), "")
}

/**
 * Compiled validators of `ajv()` by the schema's JSON. ajv keeps every schema object it compiled, and
 * callers pass a fresh copy each time (a deployment's schema, prepared per request): without this,
 * each request would compile again and ajv's own cache would grow for ever. `schema` is the object
 * compiled (the one ajv's errors point into).
 */
export const validatorCache = (ajv: () => Ajv, max = 256) => {
  const validators = new Map<string, { readonly schema: object; readonly validate: ValidateFunction }>()
  return (schema: object): { readonly schema: object; readonly validate: ValidateFunction } => {
    const key = JSON.stringify(schema)
    const cached = validators.get(key)
    if (cached !== undefined) {
      // Most recently used last, so the oldest is evicted first.
      validators.delete(key)
      validators.set(key, cached)
      return cached
    }
    let validate: ValidateFunction
    try {
      validate = ajv().compile(schema)
    } catch (error) {
      // ajv keeps the schema it failed to compile: each request's copy would stay for ever.
      ajv().removeSchema(schema)
      throw error
    }
    const entry = { schema, validate }
    validators.set(key, entry)
    if (validators.size > max) {
      const [oldestKey, oldest] = validators.entries().next().value!
      validators.delete(oldestKey)
      ajv().removeSchema(oldest.schema)
    }
    return entry
  }
}

const validatorFor = (schema: object): ValidateFunction => cachedValidator(schema).validate
const cachedValidator = validatorCache(ajv)

/** Checks `value` against `schema`; a schema that does not compile is reported as invalid. */
export const checkAgainstSchema = (schema: unknown, value: unknown): SchemaCheck => {
  let validate
  try {
    validate = validatorFor(schema as object)
  } catch (cause) {
    return { valid: false, field: null, message: `Invalid schema: ${(cause as Error).message}`, unusable: true }
  }
  if (validate(value)) return { valid: true }
  const first = validate.errors?.[0]
  return first === undefined
    ? { valid: false, field: null, message: "is not valid" }
    : { valid: false, field: fieldOf(first), message: messageOf(first) }
}

/** The reference's wording of a failed check. */
export const describeFailure = (check: { readonly field: string | null; readonly message: string }) =>
  check.field === null
    ? `Validation failed. Failure reason: ${check.message}`
    : `Validation failed for field '${check.field}'. Failure reason: ${check.message}`

type JsonSchema = Record<string, unknown>


/**
 * A parameter schema made lenient as the reference makes it before validating: optional properties
 * without a default also accept null and (when asked) no property is required.
 */
export const prepareParameterSchema = (schema: JsonSchema, options: { readonly ignoreRequired: boolean }): JsonSchema => {
  const visitProperties = (node: JsonSchema): JsonSchema => {
    const copy: JsonSchema = { ...node }
    if (isObject(copy.properties)) {
      const required = Array.isArray(copy.required) ? (copy.required as Array<unknown>) : []
      const properties: JsonSchema = {}
      for (const [name, property] of Object.entries(copy.properties)) {
        if (!isObject(property)) {
          properties[name] = property
          continue
        }
        let next: JsonSchema = visitProperties(property)
        if (!required.includes(name) && "type" in next && next.type !== "null" && !("default" in next)) {
          const { type, ...rest } = next
          next = { ...rest, anyOf: [{ type }, { type: "null" }] }
        }
        properties[name] = next
      }
      copy.properties = properties
    }
    for (const key of ["definitions", "$defs"]) {
      if (isObject(copy[key])) {
        copy[key] = Object.fromEntries(
          Object.entries(copy[key] as JsonSchema).map(([name, def]) => [name, isObject(def) ? visitProperties(def) : def])
        )
      }
    }
    return copy
  }
  const dropRequired = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(dropRequired)
    if (!isObject(node)) return node
    return Object.fromEntries(Object.entries(node).filter(([key]) => key !== "required").map(([k, v]) => [k, dropRequired(v)]))
  }
  const prepared = visitProperties(schema)
  return options.ignoreRequired ? (dropRequired(prepared) as JsonSchema) : prepared
}

/** Checks parameters against a deployment's parameter schema, the reference's way. */
export const checkParameters = (schema: JsonSchema, parameters: unknown, options: { readonly ignoreRequired: boolean }) =>
  checkAgainstSchema(prepareParameterSchema(schema, options), parameters)
