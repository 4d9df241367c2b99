/**
 * Checking values against a JSON Schema and reporting every problem, as the reference's UI endpoint
 * does (POST /ui/schemas/validate): the schema prepared the way the reference prepares parameter
 * schemas, checked against JSON Schema 2020-12, and the values (hydrated, their problems kept in place
 * as placeholders) validated under 2020-12 with ajv; schema-problems.ts words what ajv finds as the
 * reference does.
 */
import type { ErrorObject, ValidateFunction } from "ajv"
import { isIPv4, isIPv6 } from "node:net"
import { pythonRepr, validatorCache } from "./json-schema.ts"
import { memoize, onFirstUse } from "./on-first-use.ts"
import { placeholderOf } from "./parameters.ts"
import { patternProblem, regExpEngine } from "./regex.ts"
import {
  asList,
  fromOtherSchema,
  isRegex,
  mergeAdditional,
  PLACEHOLDER,
  type Problems,
  problemsOf,
  resolve,
  schemaObjects,
  withoutBranches,
  wordingOf
} from "./schema-problems.ts"
import { isObject } from "./schemas.ts"

type JsonSchema = Record<string, unknown>

export type { Problems }

export type ValuesCheck =
  | { readonly _tag: "Checked"; readonly errors: ReadonlyArray<Problems>; readonly valid: boolean }
  /** The schema cannot be used: the reference's 422 detail. */
  | { readonly _tag: "InvalidSchema"; readonly detail: string }

// ---------------------------------------------------------------------------------------------
// Preparing the schema, as the reference does before validating

/** A block document may be given by reference (its id, or a selector) where a block is expected. */
const blockReference = () => ({
  type: "object",
  properties: {
    $ref: {
      oneOf: [
        { type: "string", format: "uuid" },
        { type: "object", additionalProperties: { type: "string" }, minProperties: 1 }
      ]
    }
  },
  required: ["$ref"]
})

const processProperties = (properties: JsonSchema, requiredFields: ReadonlyArray<unknown>) => {
  // The reference reads a nested object's required list into the same variable, so the properties
  // after one that has properties of its own are judged by that list: kept, to accept what it accepts.
  let required = requiredFields
  for (const [key, schema] of Object.entries(properties)) {
    if (!isObject(schema)) continue
    // An optional property without a default may be null.
    if (!required.includes(key) && "type" in schema && schema.type !== "null" && !("default" in schema)) {
      const type = schema.type
      schema.anyOf = [{ type }, { type: "null" }]
      delete schema.type
    }
    // A tuple's `items` list is 2020-12's `prefixItems`.
    if (Array.isArray(schema.items) && schema.items.length > 0 && !(Array.isArray(schema.prefixItems) ? schema.prefixItems.length > 0 : schema.prefixItems)) {
      schema.prefixItems = structuredClone(schema.items)
      delete schema.items
    }
    if ("properties" in schema && isObject(schema.properties)) {
      required = asList(schema.required)
      processProperties(schema.properties, required)
    }
  }
}

/** The schema as the reference validates with it (a copy). */
export const prepareSchema = (schema: JsonSchema): JsonSchema => {
  const copy = structuredClone(schema)
  if (isObject(copy.properties)) processProperties(copy.properties, asList(copy.required))
  const definitions = copy.definitions
  if (isObject(definitions)) {
    for (const definition of Object.values(definitions)) {
      if (!isObject(definition)) continue
      if (isObject(definition.properties)) processProperties(definition.properties, asList(definition.required))
      if ("block_type_slug" in definition) definitions[String(definition.title)] = { oneOf: [definition, blockReference()] }
    }
  }
  return copy
}

// ---------------------------------------------------------------------------------------------
// The validator

/** A reference without its `#fragment` (by index: `/#.*$/` takes quadratic time on a long ref). */
const withoutFragment = (ref: string) => {
  const hash = ref.indexOf("#")
  return hash === -1 ? ref : ref.slice(0, hash)
}

/** Stands for a `$ref` that resolves to nothing: reaching it stops the check. */
const UNRESOLVABLE = "x-baton-unresolvable"

class Unresolvable extends Error {}

const RFC3339 =
  /^(\d{4})-(0[1-9]|1[0-2])-(\d{2})T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/i

const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate()

const isDateTime = (value: string) => {
  const m = RFC3339.exec(value)
  return m !== null && Number(m[3]) >= 1 && Number(m[3]) <= daysIn(Number(m[1]), Number(m[2]))
}

const isDate = (value: string) => {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value)
  if (m === null) return false
  const month = Number(m[2])
  return month >= 1 && month <= 12 && Number(m[3]) >= 1 && Number(m[3]) <= daysIn(Number(m[1]), month)
}

/** The formats the reference's validator checks (those it has a checker for), as it checks them. */
const formats = {
  "date-time": isDateTime,
  time: (value: string) => isDateTime(`1970-01-01T${value}`),
  date: isDate,
  email: (value: string) => value.includes("@"),
  "idn-email": (value: string) => value.includes("@"),
  ipv4: (value: string) => isIPv4(value),
  ipv6: (value: string) => isIPv6(value),
  uuid: (value: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value),
  regex: isRegex
}

const ajv2020 = onFirstUse<typeof import("ajv/dist/2020.js")>("ajv/dist/2020.js")

const makeAjv = () => {
  // Remote $refs are never fetched: ajv resolves only what the schema itself holds. Other formats
  // are not checked (nor are they by the reference).
  const ajv = new (ajv2020().Ajv2020)({
    allErrors: true,
    strict: false,
    verbose: true,
    ownProperties: true,
    logger: false,
    formats,
    // Patterns run with RE2 (regex.ts), in linear time.
    code: { regExp: regExpEngine }
  })
  const placeholderCheck: ((schema: unknown, data: unknown) => boolean) & { errors?: Array<Partial<ErrorObject>> } = (
    _schema,
    data
  ) => {
    const placeholder = placeholderOf(data)
    if (placeholder === undefined || placeholder.problem === null) return true
    placeholderCheck.errors = [{ keyword: PLACEHOLDER, message: placeholder.problem, params: {} }]
    return false
  }
  ajv.addKeyword({ keyword: PLACEHOLDER, errors: true, validate: placeholderCheck })
  ajv.addKeyword({
    keyword: UNRESOLVABLE,
    validate: (schema: unknown) => {
      throw new Unresolvable(String(schema))
    }
  })
  return ajv
}

const shared = memoize(makeAjv)
const sharedValidator = validatorCache(shared, 128)

/**
 * The schema ajv is given: without `$schema` (the reference validates under 2020-12 whatever it
 * says), `$ref`s that resolve to nothing replaced by UNRESOLVABLE (the reference fails only when it
 * reaches one), and, when the values hold problems, PLACEHOLDER in every schema object.
 */
const forAjv = (prepared: JsonSchema, withPlaceholders: boolean): JsonSchema => {
  const { $schema: _, ...root } = structuredClone(prepared)
  const objects = schemaObjects(root)
  const ids = new Set(objects.flatMap((o) => (typeof o.$id === "string" ? [o.$id.replace(/#$/, "")] : [])))
  for (const object of objects) {
    const ref = object.$ref
    if (typeof ref === "string") {
      const local = ref.startsWith("#/") || ref === "#"
      const problem = local
        ? resolve(root, ref) === undefined ? `${pythonRepr(ref.slice(1))} does not exist within ${pythonRepr(prepared)}` : undefined
        : ref.startsWith("#") || ids.has(withoutFragment(ref))
        ? undefined
        : `Unresolvable: ${ref}`
      if (problem !== undefined) {
        delete object.$ref
        object[UNRESOLVABLE] = problem
      }
    }
    if (withPlaceholders) object[PLACEHOLDER] = true
  }
  return root
}

/** Whether a hydrated value holds a placeholder with a problem. */
const holdsProblems = (value: unknown): boolean => {
  const placeholder = placeholderOf(value)
  if (placeholder !== undefined) return placeholder.problem !== null
  if (Array.isArray(value)) return value.some(holdsProblems)
  return isObject(value) && Object.values(value).some(holdsProblems)
}

// ---------------------------------------------------------------------------------------------

/** Ajv's problems in meta-schema errors, the reference's first as its detail; undefined when valid. */
export const schemaProblem = (prepared: JsonSchema): string | undefined => {
  const { $schema: _, ...schema } = prepared
  let valid: boolean
  try {
    valid = shared().validateSchema(schema) as boolean
  } catch (error) {
    return `Invalid schema: ${(error as Error).message}`
  }
  if (!valid) {
    const first = mergeAdditional(withoutBranches(shared().errors ?? [], fromOtherSchema))[0]
    return `Invalid schema: ${first === undefined ? "is not valid" : wordingOf(first)}`
  }
  // The meta-schema's `format: regex`, which ajv leaves to compiling.
  for (const object of schemaObjects(schema)) {
    const patterns = [
      ...(typeof object.pattern === "string" ? [object.pattern] : []),
      ...(isObject(object.patternProperties) ? Object.keys(object.patternProperties) : [])
    ]
    const bad = patterns.find((pattern) => !isRegex(pattern))
    if (bad !== undefined) return `Invalid schema: ${pythonRepr(bad)} is not a 'regex'`
    // A valid regular expression that RE2 cannot run (lookaround, backreferences), or a huge one.
    const unsupported = patterns.map(patternProblem).find((problem) => problem !== undefined)
    if (unsupported !== undefined) return `Invalid schema: ${unsupported}`
  }
  return undefined
}

const CIRCULAR = "Invalid schema: Unable to validate schema with circular references."

/** A validator for the schema: shared and cached, or (a `$id` taken by another schema) its own. */
const validatorOf = (schema: JsonSchema): { readonly schema: object; readonly validate: ValidateFunction } => {
  try {
    return sharedValidator(schema)
  } catch (error) {
    try {
      shared().removeSchema(schema)
    } catch {
      // nothing was kept
    }
    if (error instanceof Error && /already exists/.test(error.message)) return { schema, validate: makeAjv().compile(schema) }
    throw error
  }
}

/**
 * Checks hydrated values against a schema prepared with prepareSchema (and found valid by
 * schemaProblem): every problem, nested by place; or why the schema cannot be used.
 */
export const checkValues = (prepared: JsonSchema, values: unknown): ValuesCheck => {
  const invalid = (detail: string): ValuesCheck => ({ _tag: "InvalidSchema", detail })
  let compiled: { readonly schema: object; readonly validate: ValidateFunction }
  try {
    compiled = validatorOf(forAjv(prepared, holdsProblems(values)))
  } catch (error) {
    if (error instanceof RangeError) return invalid(CIRCULAR)
    return invalid(`Invalid schema: ${(error as Error).message}`)
  }
  try {
    compiled.validate(values)
  } catch (error) {
    if (error instanceof RangeError) return invalid(CIRCULAR)
    if (error instanceof Unresolvable) return invalid(`Invalid schema: Validation failed. Failure reason: ${error.message}`)
    throw error
  }
  const errors = problemsOf(compiled.schema as JsonSchema, values, compiled.validate.errors ?? [])
  return { _tag: "Checked", errors, valid: errors.length === 0 }
}
