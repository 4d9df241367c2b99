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

  prototype.addFields = function(this: DriverResult, fields: ReadonlyArray<Field>) {
    this.fields = fields
    const types = this._types ?? pgTypes
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
  }

  prototype.parseRow = function(this: DriverResult, values: ReadonlyArray<unknown>) {
    return this.batonMakeRow!(values, this._parsers!, binaryValue)
  }
  prototype[INSTALLED] = true
}
