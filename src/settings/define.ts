/**
 * The building blocks of the settings tree: each leaf is a Schema from its JSON form (what the
 * settings report shows) to its typed value, plus a default, a parser for the raw environment
 * string and what the error message calls the expected type.
 */
import { Duration, Option, ParseResult, Redacted, Schema } from "effect"

export interface Setting<A = unknown> {
  readonly _tag: "Setting"
  /** Typed value ⇐ JSON form. Encoding it gives the settings report's value. */
  readonly schema: Schema.Schema<A, any>
  readonly default: () => A
  /** The raw environment string turned into the JSON form the schema decodes. */
  readonly fromEnv: (raw: string) => unknown
  /** What a bad value is reported as expecting, e.g. "integer >= 1". */
  readonly expected: string
  readonly secret: boolean
  readonly description: string
}

export interface Tree {
  readonly [key: string]: Setting<any> | Tree
}

export type SettingsOf<T extends Tree> = {
  readonly [K in keyof T]: T[K] extends Setting<infer A> ? A : T[K] extends Tree ? SettingsOf<T[K]> : never
}

export const isSetting = (u: unknown): u is Setting<unknown> =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "Setting"

const make = <A>(options: {
  readonly schema: Schema.Schema<A, any>
  readonly default: () => A
  readonly fromEnv?: (raw: string) => unknown
  readonly expected: string
  readonly secret?: boolean
  readonly description: string
}): Setting<A> => ({
  _tag: "Setting",
  schema: options.schema,
  default: options.default,
  fromEnv: options.fromEnv ?? ((raw) => raw),
  expected: options.expected,
  secret: options.secret ?? false,
  description: options.description
})

// --- raw string parsing: leave the string as is when it does not parse, so the schema reports it

const parseNumber = (raw: string): unknown => {
  const trimmed = raw.trim()
  if (trimmed === "") return raw
  const n = Number(trimmed)
  return Number.isNaN(n) ? raw : n
}

const parseBoolean = (raw: string): unknown => {
  switch (raw.trim().toLowerCase()) {
    case "true":
    case "1":
    case "yes":
    case "on":
      return true
    case "false":
    case "0":
    case "no":
    case "off":
      return false
    default:
      return raw
  }
}

const parseJson = (raw: string): unknown => {
  try {
    return JSON.parse(raw)
  } catch {
    return raw
  }
}

/** A list from a JSON array or a comma-separated string. */
const parseList = (raw: string): unknown => {
  const trimmed = raw.trim()
  if (trimmed.startsWith("[")) return parseJson(trimmed)
  return trimmed === "" ? [] : trimmed.split(",").map((s) => s.trim())
}

/** `null`, `none` and the empty string unset an optional setting. */
const nullable = (parse: (raw: string) => unknown) => (raw: string): unknown =>
  ["", "null", "none"].includes(raw.trim().toLowerCase()) ? null : parse(raw)

// --- ISO 8601 durations

const ISO_DURATION =
  /^P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i

export const parseIsoDuration = (text: string): Option.Option<Duration.Duration> => {
  const m = ISO_DURATION.exec(text.trim())
  if (m === null || text.trim().toUpperCase() === "P" || text.trim().toUpperCase().endsWith("T")) {
    return Option.none()
  }
  const [w, d, h, min, s] = m.slice(1).map((part) => (part === undefined ? 0 : Number(part)))
  const seconds = (w! * 7 + d!) * 86_400 + h! * 3600 + min! * 60 + s!
  return Option.some(Duration.seconds(seconds))
}

/** The ISO 8601 form the reference's settings report uses: days, then a time part (P7D, PT1H, PT15S). */
export const formatIsoDuration = (duration: Duration.Duration): string => {
  const totalMillis = Duration.toMillis(duration)
  let seconds = totalMillis / 1000
  const days = Math.floor(seconds / 86_400)
  seconds -= days * 86_400
  const hours = Math.floor(seconds / 3600)
  seconds -= hours * 3600
  const minutes = Math.floor(seconds / 60)
  seconds -= minutes * 60
  const secondsText = Number.isInteger(seconds) ? String(seconds) : seconds.toFixed(6).replace(/0+$/, "")
  const time = (hours ? `${hours}H` : "") + (minutes ? `${minutes}M` : "") + (seconds ? `${secondsText}S` : "")
  if (days === 0 && time === "") return "PT0S"
  return `P${days ? `${days}D` : ""}${time ? `T${time}` : ""}`
}

/** ISO 8601 duration string (or a number of seconds) ⇄ Duration. */
export const DurationFromIso: Schema.Schema<Duration.Duration, string | number> = Schema.transformOrFail(
  Schema.Union(Schema.String, Schema.Number),
  Schema.DurationFromSelf,
  {
    strict: true,
    decode: (input, _, ast) => {
      if (typeof input === "number") {
        return input >= 0
          ? ParseResult.succeed(Duration.seconds(input))
          : ParseResult.fail(new ParseResult.Type(ast, input, "a duration cannot be negative"))
      }
      return Option.match(parseIsoDuration(input), {
        onNone: () => ParseResult.fail(new ParseResult.Type(ast, input, "expected an ISO 8601 duration such as PT1H")),
        onSome: ParseResult.succeed
      })
    },
    encode: (duration) => ParseResult.succeed(formatIsoDuration(duration))
  }
).annotations({ identifier: "Duration", jsonSchema: { type: "string", format: "duration" } })

// --- leaf constructors

export const string = (defaultValue: string, description: string): Setting<string> =>
  make({ schema: Schema.String, default: () => defaultValue, expected: "string", description })

/** A string that may be unset (null), with no default. */
export const optionalString = (description: string): Setting<string | null> =>
  make({
    schema: Schema.NullOr(Schema.String),
    default: () => null,
    fromEnv: nullable((raw) => raw),
    expected: "string",
    description
  })

/** One of a fixed set of strings, matched case-insensitively and stored as written in `values`. */
export const literal = <const L extends ReadonlyArray<string>>(
  values: L,
  defaultValue: L[number],
  description: string
): Setting<L[number]> =>
  make({
    schema: Schema.Literal(...values),
    default: () => defaultValue,
    fromEnv: (raw) => values.find((v) => v.toLowerCase() === raw.trim().toLowerCase()) ?? raw,
    expected: `one of ${values.join(", ")}`,
    description
  })

/** Logging levels as the reference spells them. */
export const logLevel = (defaultValue: LogLevelName, description: string): Setting<LogLevelName> =>
  literal(LOG_LEVELS, defaultValue, description)
export const LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] as const
export type LogLevelName = (typeof LOG_LEVELS)[number]

export const integer = (
  defaultValue: number,
  description: string,
  bounds: { readonly min?: number; readonly max?: number } = {}
): Setting<number> => {
  let schema: Schema.Schema<number> = Schema.Int
  if (bounds.min !== undefined) schema = schema.pipe(Schema.greaterThanOrEqualTo(bounds.min))
  if (bounds.max !== undefined) schema = schema.pipe(Schema.lessThanOrEqualTo(bounds.max))
  return make({
    schema,
    default: () => defaultValue,
    fromEnv: parseNumber,
    expected: "integer" + boundsText(bounds),
    description
  })
}

export const optionalInteger = (description: string): Setting<number | null> =>
  make({
    schema: Schema.NullOr(Schema.Int),
    default: () => null,
    fromEnv: nullable(parseNumber),
    expected: "integer",
    description
  })

export const number = (
  defaultValue: number,
  description: string,
  bounds: { readonly min?: number; readonly max?: number } = {}
): Setting<number> => {
  let schema: Schema.Schema<number> = Schema.Number.pipe(Schema.finite())
  if (bounds.min !== undefined) schema = schema.pipe(Schema.greaterThanOrEqualTo(bounds.min))
  if (bounds.max !== undefined) schema = schema.pipe(Schema.lessThanOrEqualTo(bounds.max))
  return make({
    schema,
    default: () => defaultValue,
    fromEnv: parseNumber,
    expected: "number" + boundsText(bounds),
    description
  })
}

const boundsText = (bounds: { readonly min?: number; readonly max?: number }) =>
  [bounds.min !== undefined ? `>= ${bounds.min}` : "", bounds.max !== undefined ? `<= ${bounds.max}` : ""]
    .filter(Boolean)
    .map((s) => ` ${s}`)
    .join("")

export const boolean = (defaultValue: boolean, description: string): Setting<boolean> =>
  make({ schema: Schema.Boolean, default: () => defaultValue, fromEnv: parseBoolean, expected: "boolean", description })

/** An ISO 8601 duration (PT1H, P7D) or a number of seconds; reported in ISO form. */
export const duration = (defaultIso: string, description: string): Setting<Duration.Duration> =>
  make({
    schema: DurationFromIso,
    default: () => Option.getOrThrow(parseIsoDuration(defaultIso)),
    fromEnv: (raw) => (/^\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : raw),
    expected: "ISO 8601 duration (e.g. PT1H) or seconds",
    description
  })

/** A secret: Redacted in memory, obfuscated in every report; null when unset. */
export const secret = (description: string): Setting<Redacted.Redacted<string> | null> =>
  make({
    schema: Schema.NullOr(Schema.Redacted(Schema.String)),
    default: () => null,
    fromEnv: nullable((raw) => raw),
    expected: "string",
    secret: true,
    description
  })

export const stringList = (defaultValue: ReadonlyArray<string>, description: string): Setting<ReadonlyArray<string>> =>
  make({
    schema: Schema.Array(Schema.String),
    default: () => defaultValue,
    fromEnv: parseList,
    expected: "list of strings (JSON array or comma-separated)",
    description
  })

export const optionalStringList = (description: string): Setting<ReadonlyArray<string> | null> =>
  make({
    schema: Schema.NullOr(Schema.Array(Schema.String)),
    default: () => null,
    fromEnv: nullable(parseList),
    expected: "list of strings (JSON array or comma-separated)",
    description
  })

/** A JSON object of string values (e.g. extra headers). */
export const stringRecord = (
  defaultValue: Readonly<Record<string, string>>,
  description: string
): Setting<Readonly<Record<string, string>>> =>
  make({
    schema: Schema.Record({ key: Schema.String, value: Schema.String }),
    default: () => defaultValue,
    fromEnv: parseJson,
    expected: "JSON object of strings",
    description
  })
