/**
 * How node-postgres builds the rows of a result, made cheaper. For each statement it makes an empty
 * row as a prototype-less dictionary (`Object.create(null)`, one key per column) and spreads it
 * into a template, then spreads that template into every row: both spreads take V8's slow path
 * for dictionaries, paid once per statement whether it returns rows or not, and the rows come out
 * as dictionaries, slower to read. Baton reads wide rows on every request (a run is over forty
 * columns): the result's columns cost ~15 µs a statement that way, ~2 µs here.
 *
 * Here a row is an object literal with the columns in order, made by a function compiled once per
 * column list (a bounded cache), so every row of a statement shares one fast shape. The values are
 * parsed by the same type parsers, a repeated column name keeps its first position and its last
 * value, and a column named `__proto__` is an own property, as node-postgres makes them.
 *
 * Installed once per process on node-postgres's Result class (the one its queries use), by the
 * database client.
 */
import { createRequire } from "node:module"

interface Field {
  readonly name: string
  readonly dataTypeID: number
  readonly format?: string
}

type Parser = (value: unknown) => unknown
type TypeSource = { readonly getTypeParser: (oid: number, format: string) => Parser }
type MakeRow = (values: ReadonlyArray<unknown>, parsers: ReadonlyArray<Parser>, binary: (value: unknown) => unknown) => object

interface DriverResult {
  fields: ReadonlyArray<Field>
  _parsers: Array<Parser> | undefined
  _types: TypeSource | undefined
  batonMakeRow?: MakeRow
  addFields(fields: ReadonlyArray<Field>): void
  parseRow(values: ReadonlyArray<unknown>): object
}

/** Column lists whose row functions are kept; beyond it they are compiled again when met. */
export const ROW_SHAPES_KEPT = 512

const INSTALLED = Symbol.for("baton/database/driverRows")

const binaryValue = (value: unknown) => Buffer.from(value as Uint8Array)

/** The row function of one column list: `{ "a": parse(values[0]), "b": … }`. */
const compileRow = (fields: ReadonlyArray<Field>): MakeRow => {
  const entries = fields.map((field, i) => {
    const raw = field.format === "binary" ? `binary(v[${i}])` : `v[${i}]`
    // A computed key defines an own property even for "__proto__" (a plain `"__proto__":` would set the prototype).
    return `[${JSON.stringify(field.name)}]: v[${i}] === null ? null : p[${i}](${raw})`
  })
  return new Function("v", "p", "binary", `"use strict"; return { ${entries.join(", ")} }`) as MakeRow
}

/** Installs the row builder on node-postgres's Result class; idempotent. */
export const installDriverRows = () => {
  // node-postgres's own modules, resolved from it: its Result class and its type parsers.
  const fromPg = createRequire(createRequire(import.meta.url).resolve("pg/lib/result.js"))
  const Result = fromPg("./result.js") as { prototype: DriverResult & { [INSTALLED]?: true } }
  const pgTypes = fromPg("pg-types") as TypeSource
  const prototype = Result.prototype
  if (prototype[INSTALLED] === true) return
  const shapes = new Map<string, MakeRow>()
  // A description given again (a kept statement's, ./prepared.ts) has its parsers and row function already.
  const madeFor = new WeakMap<ReadonlyArray<Field>, { readonly types: TypeSource; readonly parsers: Array<Parser>; readonly makeRow: MakeRow }>()

  prototype.addFields = function(this: DriverResult, fields: ReadonlyArray<Field>) {
    this.fields = fields
    const types = this._types ?? pgTypes
    const made = madeFor.get(fields)
    if (made !== undefined && made.types === types) {
      this._parsers = made.parsers
      this.batonMakeRow = made.makeRow
      return
    }
    const parsers = new Array<Parser>(fields.length)
    let key = ""
    for (let i = 0; i < fields.length; i++) {
      const field = fields[i]!
      parsers[i] = types.getTypeParser(field.dataTypeID, field.format || "text")
      key += `${field.name}\u0000${field.format === "binary" ? "b" : "t"}\u0000`
    }
    this._parsers = parsers
    let makeRow = shapes.get(key)
    if (makeRow === undefined) {
      makeRow = compileRow(fields)
      if (shapes.size >= ROW_SHAPES_KEPT) shapes.delete(shapes.keys().next().value!)
      shapes.set(key, makeRow)
    }
    this.batonMakeRow = makeRow
    madeFor.set(fields, { types, parsers, makeRow })
  }

  prototype.parseRow = function(this: DriverResult, values: ReadonlyArray<unknown>) {
    return this.batonMakeRow!(values, this._parsers!, binaryValue)
  }
  prototype[INSTALLED] = true
}

const TIMESTAMPTZ = 1184

/** Two ASCII digits at `at` as a number; -1 when either is not a digit. */
const twoDigits = (text: string, at: number): number => {
  const tens = text.charCodeAt(at) - 48
  const ones = text.charCodeAt(at + 1) - 48
  return tens >= 0 && tens <= 9 && ones >= 0 && ones <= 9 ? tens * 10 + ones : -1
}

/**
 * A `timestamptz` as PostgreSQL writes it in UTC (`2026-11-29 01:17:03.416123+00`), read without
 * the regular expressions node-postgres's parser runs on every one (a run's row has nine). The
 * milliseconds are the fraction's first three digits, as that parser makes them; any other form (a
 * zone other than UTC, years before 1000, BC, infinity) goes to that parser.
 */
export const timestamptzParser = (fallback: Parser) => (value: unknown): unknown => {
  const text = value as string
  const n = text.length
  if (
    n < 22 || n > 29 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || text.charCodeAt(10) !== 32 ||
    text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58 ||
    text.charCodeAt(n - 3) !== 43 || text.charCodeAt(n - 2) !== 48 || text.charCodeAt(n - 1) !== 48
  ) return fallback(value)
  const century = twoDigits(text, 0)
  const year = twoDigits(text, 2)
  const month = twoDigits(text, 5)
  const day = twoDigits(text, 8)
  const hour = twoDigits(text, 11)
  const minute = twoDigits(text, 14)
  const second = twoDigits(text, 17)
  if (century < 10 || year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return fallback(value)
  let millis = 0
  if (n > 22) {
    // `.` and one to six digits before the zone.
    if (n === 23 || text.charCodeAt(19) !== 46) return fallback(value)
    for (let at = 20, scale = 100; at < n - 3; at++, scale /= 10) {
      const digit = text.charCodeAt(at) - 48
      if (digit < 0 || digit > 9) return fallback(value)
      if (scale >= 1) millis += digit * scale
    }
  }
  return new Date(Date.UTC(century * 100 + year, month - 1, day, hour, minute, second, millis))
}

/**
 * node-postgres's type parsers with `timestamptz` read by timestamptzParser: the types Baton's
 * pools are made with (unless a configuration gives its own).
 */
export const rowTypes = (() => {
  const pgTypes = createRequire(createRequire(import.meta.url).resolve("pg/lib/result.js"))("pg-types") as TypeSource
  const timestamptz = timestamptzParser(pgTypes.getTypeParser(TIMESTAMPTZ, "text"))
  return {
    getTypeParser: (oid: number, format?: string) =>
      oid === TIMESTAMPTZ && (format === undefined || format === "text") ? timestamptz : pgTypes.getTypeParser(oid, format ?? "text")
  }
})()
