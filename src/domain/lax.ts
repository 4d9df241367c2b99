/**
 * Integers, numbers and booleans of request bodies and query strings, read as the reference reads
 * them: pydantic's lax mode, which takes a numeric string for a number (`"1"`, `" 2.5 "`, `"1_000"`),
 * `true`/`false` for 1/0, and the words and numbers a boolean may be written as (`"yes"`, `"off"`,
 * `1`, `0` …). What does not read is a `*_parsing` problem (`int_parsing`, `float_parsing`,
 * `bool_parsing`), a value of another JSON type a `*_type` one, as pydantic words them.
 *
 * Each is a transformation from what was sent to the plain type, so the value a handler sees (and
 * the one a response writes) is always the plain number or boolean, and the OpenAPI document shows
 * the plain type with its bounds. Bounds are Effect's own refinements (greaterThanOrEqualTo …),
 * which the 422 mapper reports as pydantic's `greater_than_equal` etc. with their `ctx`.
 *
 * Where the reference is strict (label values, variable values: unions of StrictBool, StrictInt,
 * StrictFloat and str) the plain Schema types are used instead.
 */
import { Either, ParseResult, Schema } from "effect"
import { BoundTextAnnotationId, InputAsSentAnnotationId, wireIssue } from "./problems.ts"

/** pydantic's bounds (Field(ge=…, le=…)); `text` writes them as the reference does (a duration's "0 seconds"). */
export interface Bounds {
  readonly gt?: number
  readonly ge?: number
  readonly lt?: number
  readonly le?: number
  readonly text?: (bound: number) => string
}

type Read = (input: unknown) => Either.Either<number | boolean, ParseResult.ParseIssue>

const INT_TYPE = "Input should be a valid integer"
const INT_PARSING = "Input should be a valid integer, unable to parse string as an integer"
const FLOAT_TYPE = "Input should be a valid number"
const FLOAT_PARSING = "Input should be a valid number, unable to parse string as a number"
const BOOL_TYPE = "Input should be a valid boolean"
const BOOL_PARSING = "Input should be a valid boolean, unable to interpret input"

/** Underscores between digits, as Python writes long numbers (`1_000`); none at the ends, never two together. */
const withoutUnderscores = (text: string) =>
  text.includes("_") && !text.startsWith("_") && !text.endsWith("_") && !text.includes("__") ? text.replaceAll("_", "") : undefined

/** An integer as pydantic reads one from text: spaces around it, a sign, leading zeros, `.0` after it, underscores. */
const INTEGER_TEXT = /^[+-]?\d+(?:_\d+)*(?:\.0+)?$/
const readIntText = (text: string): number | undefined => {
  const trimmed = text.trim()
  if (!INTEGER_TEXT.test(trimmed)) return undefined
  return Number(trimmed.replaceAll("_", "").replace(/\.0+$/, ""))
}

/** A number as Rust's float parser reads one (what pydantic uses), after trimming. */
const FLOAT_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/
const NON_FINITE_TEXT = /^[+-]?(?:inf|infinity|nan)$/i
const readFloatText = (text: string): number | "non-finite" | undefined => {
  for (const candidate of [text.trim(), withoutUnderscores(text)]) {
    if (candidate === undefined) continue
    if (FLOAT_TEXT.test(candidate)) return Number(candidate)
    if (NON_FINITE_TEXT.test(candidate)) return "non-finite"
  }
  return undefined
}

const TRUE_WORDS = new Set(["1", "t", "y", "on", "yes", "true"])
const FALSE_WORDS = new Set(["0", "f", "n", "no", "off", "false"])

/** A boolean as pydantic reads one from text (no trimming; case does not matter). */
const readBoolText = (text: string): boolean | undefined => {
  const word = text.toLowerCase()
  return TRUE_WORDS.has(word) ? true : FALSE_WORDS.has(word) ? false : undefined
}

const readInt: Read = (input) => {
  // A number with a fractional part is left to Schema.Int, which reports int_from_float.
  if (typeof input === "number") return Either.right(input)
  if (typeof input === "boolean") return Either.right(input ? 1 : 0)
  if (typeof input === "string") {
    if (input.length > 4300) {
      return Either.left(wireIssue("int_parsing_size", "Unable to parse input string as an integer, exceeded maximum size", input))
    }
    const value = readIntText(input)
    return value === undefined ? Either.left(wireIssue("int_parsing", INT_PARSING, input)) : Either.right(value)
  }
  return Either.left(wireIssue("int_type", INT_TYPE, input))
}

const readFloat: Read = (input) => {
  if (typeof input === "number") return Either.right(input)
  if (typeof input === "boolean") return Either.right(input ? 1 : 0)
  if (typeof input === "string") {
    const value = readFloatText(input)
    if (value === "non-finite") return Either.left(wireIssue("finite_number", "Input should be a finite number", input))
    return value === undefined ? Either.left(wireIssue("float_parsing", FLOAT_PARSING, input)) : Either.right(value)
  }
  return Either.left(wireIssue("float_type", FLOAT_TYPE, input))
}

const readBool: Read = (input) => {
  if (typeof input === "boolean") return Either.right(input)
  if (typeof input === "string") {
    const value = readBoolText(input)
    return value === undefined ? Either.left(wireIssue("bool_parsing", BOOL_PARSING, input)) : Either.right(value)
  }
  if (typeof input === "number") {
    if (input === 0 || input === 1) return Either.right(input === 1)
    // A whole number other than 0 or 1 does not read as a boolean; any other number is not one.
    return Either.left(Number.isInteger(input) ? wireIssue("bool_parsing", BOOL_PARSING, input) : wireIssue("bool_type", BOOL_TYPE, input))
  }
  return Either.left(wireIssue("bool_type", BOOL_TYPE, input))
}

/** The JSON Schema keywords of `bounds`. */
const boundsSchema = (bounds: Bounds) => ({
  ...(bounds.gt !== undefined ? { exclusiveMinimum: bounds.gt } : {}),
  ...(bounds.ge !== undefined ? { minimum: bounds.ge } : {}),
  ...(bounds.lt !== undefined ? { exclusiveMaximum: bounds.lt } : {}),
  ...(bounds.le !== undefined ? { maximum: bounds.le } : {})
})

/** `base` with the refinements of `bounds`, each reported on its own (ge before le, as pydantic checks). */
const bounded = (base: Schema.Schema<number>, bounds: Bounds): Schema.Schema<number> => {
  const text = (bound: number) => (bounds.text === undefined ? {} : { [BoundTextAnnotationId]: bounds.text(bound) })
  let schema = base
  if (bounds.gt !== undefined) schema = schema.pipe(Schema.greaterThan(bounds.gt, text(bounds.gt)))
  if (bounds.ge !== undefined) schema = schema.pipe(Schema.greaterThanOrEqualTo(bounds.ge, text(bounds.ge)))
  if (bounds.lt !== undefined) schema = schema.pipe(Schema.lessThan(bounds.lt, text(bounds.lt)))
  if (bounds.le !== undefined) schema = schema.pipe(Schema.lessThanOrEqualTo(bounds.le, text(bounds.le)))
  return schema
}

/**
 * A value read by `read` and then checked by `to`. The encoded side is what a client sends (any
 * JSON value, described in the OpenAPI document as `jsonSchema`); encoding is the identity, so a
 * response writes the plain value.
 */
const lax = <A extends number | boolean>(to: Schema.Schema<A>, read: Read, jsonSchema: object): Schema.Schema<A, unknown> =>
  Schema.transformOrFail(Schema.Unknown.annotations({ jsonSchema }), to, {
    strict: false,
    decode: (input) => read(input) as Either.Either<A, ParseResult.ParseIssue>,
    encode: ParseResult.succeed
  }).annotations({ [InputAsSentAnnotationId]: true })

/** An integer (pydantic `int`) within `bounds`. */
export const int = (bounds: Bounds = {}) => lax(bounded(Schema.Int, bounds), readInt, { type: "integer", ...boundsSchema(bounds) })

/** A number (pydantic `float`) within `bounds`. */
export const float = (bounds: Bounds = {}) =>
  lax(bounded(Schema.Number, bounds), readFloat, { type: "number", ...boundsSchema(bounds) })

/** An integer (pydantic `int`). */
export const Int = int()

/** A number (pydantic `float`). */
export const Float = float()

/** A boolean (pydantic `bool`). */
export const Bool = lax(Schema.Boolean, readBool, { type: "boolean" })

/** A duration bound as pydantic writes a timedelta's ("0 seconds", "1 minute and 30 seconds"). */
export const durationText = (seconds: number): string => {
  const parts: Array<string> = []
  const unit = (n: number, name: string) => n !== 0 && parts.push(`${n} ${name}${n === 1 ? "" : "s"}`)
  const days = Math.floor(seconds / 86_400)
  const rest = seconds - days * 86_400
  unit(days, "day")
  unit(Math.floor(rest / 3600), "hour")
  unit(Math.floor((rest % 3600) / 60), "minute")
  unit(Math.floor(rest % 60), "second")
  unit(Math.round((rest % 1) * 1e6), "microsecond")
  return parts.length === 0 ? "0 seconds" : parts.join(" and ")
}

/**
 * A boolean written as text (a query parameter, a header), read with the same words
 * (`include_secrets=yes`), anything else a `bool_parsing` problem at `["query", name]`.
 */
export const TextBool: Schema.Schema<boolean, string> = Schema.transformOrFail(Schema.String.annotations({ jsonSchema: { type: "boolean" } }), Schema.Boolean, {
  strict: true,
  decode: (text) => {
    const value = readBoolText(text)
    return value === undefined ? ParseResult.fail(wireIssue("bool_parsing", BOOL_PARSING, text)) : ParseResult.succeed(value)
  },
  encode: (value) => ParseResult.succeed(value ? "true" : "false")
})
