/**
 * The one filter compiler: the reference's filter objects (`operator` and_/or_, `any_`, `not_any_`,
 * `all_`, `like_`, `startswith_`, `before_`, `after_`, `is_null_` …) turned into SQL conditions.
 * An area describes its filter as a table of field compilers; nested filters compile recursively.
 */
import type { Statement } from "@effect/sql"
import type { SqlClient } from "@effect/sql/SqlClient"
import { Schema } from "effect"

export const Operator = Schema.Literal("and_", "or_").annotations({ identifier: "Operator" })

/** A filter object: unknown fields are rejected, as the reference does (422 extra_forbidden). */
export const strictStruct = <Fields extends Schema.Struct.Fields>(fields: Fields, identifier: string) =>
  Schema.Struct(fields).annotations({ identifier, parseOptions: { onExcessProperty: "error" } })

/** An optional, nullable criterion. */
export const criterion = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.NullOr(schema))

/** An operator field with the reference's default. */
export const operatorField = Schema.optionalWith(Operator, { default: () => "and_" as const })

type Fragment = Statement.Fragment
type Criteria = Readonly<Record<string, unknown>>

/** Compiles one field's criterion object into conditions. */
export type FieldCompiler = (sql: SqlClient, criterion: any) => ReadonlyArray<Fragment>

export type FilterSpec = Readonly<Record<string, FieldCompiler>>

const combine = (sql: SqlClient, operator: unknown, conditions: ReadonlyArray<Fragment>): Fragment =>
  conditions.length === 0 ? sql`TRUE` : operator === "or_" ? sql.or(conditions) : sql.and(conditions)

/** A filter object (or nothing: TRUE) as one condition; its `operator` joins its fields' conditions. */
export const compileFilter = (sql: SqlClient, filter: Criteria | null | undefined, spec: FilterSpec): Fragment => {
  if (filter === null || filter === undefined) return sql`TRUE`
  const conditions: Array<Fragment> = []
  for (const [key, value] of Object.entries(filter)) {
    if (key === "operator" || value === null || value === undefined) continue
    const field = spec[key]
    if (field === undefined) continue
    const fieldConditions = field(sql, value)
    if (fieldConditions.length > 0) conditions.push(combine(sql, (value as Criteria).operator, fieldConditions))
  }
  return combine(sql, filter.operator, conditions)
}

const col = (sql: SqlClient, column: string) => sql.unsafe(column)

const isNull = (sql: SqlClient, column: string, value: unknown): ReadonlyArray<Fragment> =>
  value === true ? [sql`${col(sql, column)} IS NULL`] : value === false ? [sql`${col(sql, column)} IS NOT NULL`] : []

/** Field compilers for the reference's kinds of criteria. `pgType` is the column's type for arrays. */
export const Field = {
  /** any_ (IN), not_any_ (NOT IN), is_null_ */
  oneOf: (column: string, pgType: "uuid" | "text"): FieldCompiler => (sql, c) => [
    // One value is an equality: the planner then walks an index on (column, sort key) in sort order.
    ...(c.any_ != null
      ? [c.any_.length === 1
        ? sql`${col(sql, column)} = ${c.any_[0]}::${sql.unsafe(pgType)}`
        : sql`${col(sql, column)} = ANY(${c.any_}::${sql.unsafe(pgType)}[])`]
      : []),
    ...(c.not_any_ != null ? [sql`NOT (${col(sql, column)} = ANY(${c.not_any_}::${sql.unsafe(pgType)}[]))`] : []),
    ...isNull(sql, column, c.is_null_)
  ],
  /** any_, not_any_, like_ (ILIKE %x%, wildcards kept as the reference does), startswith_, is_null_ */
  text: (column: string): FieldCompiler => (sql, c) => [
    ...Field.oneOf(column, "text")(sql, c),
    ...(c.like_ ? [sql`${col(sql, column)} ILIKE ${"%" + c.like_ + "%"}`] : []),
    // One array parameter for the whole list, however long (a condition per prefix would need a
    // parameter each, and PostgreSQL takes at most 65,535 in a statement).
    ...(c.startswith_ != null
      ? [sql`${col(sql, column)} ILIKE ANY(${(c.startswith_ as ReadonlyArray<string>).map((p) => p + "%")}::text[])`]
      : [])
  ],
  /** A jsonb array of strings: all_ (contains every one), any_ (contains one), is_null_ (empty). */
  tags: (column: string): FieldCompiler => (sql, c) => [
    ...(c.all_ != null ? [sql`${col(sql, column)} @> ${JSON.stringify(c.all_)}::jsonb`] : []),
    ...(c.any_ != null ? [sql`${col(sql, column)} ?| ${c.any_}::text[]`] : []),
    ...(c.is_null_ === true ? [sql`${col(sql, column)} = '[]'::jsonb`] : []),
    ...(c.is_null_ === false ? [sql`${col(sql, column)} <> '[]'::jsonb`] : [])
  ],
  /** ge_ (>=), le_ (<=) */
  range: (column: string): FieldCompiler => (sql, c) => [
    ...(c.ge_ != null ? [sql`${col(sql, column)} >= ${c.ge_}`] : []),
    ...(c.le_ != null ? [sql`${col(sql, column)} <= ${c.le_}`] : [])
  ],
  /** before_ (<=), after_ (>=), is_null_ */
  time: (column: string): FieldCompiler => (sql, c) => [
    ...(c.before_ != null ? [sql`${col(sql, column)} <= ${c.before_}`] : []),
    ...(c.after_ != null ? [sql`${col(sql, column)} >= ${c.after_}`] : []),
    ...isNull(sql, column, c.is_null_)
  ],
  /** A related row: EXISTS (subquery) when `present` is true, NOT EXISTS when false, nothing when unset. */
  exists: (sql: SqlClient, present: unknown, subquery: string): ReadonlyArray<Fragment> =>
    present === true
      ? [sql`EXISTS (SELECT 1 FROM ${sql.unsafe(subquery)})`]
      : present === false
      ? [sql`NOT EXISTS (SELECT 1 FROM ${sql.unsafe(subquery)})`]
      : [],
  /** is_null_ only (e.g. "has a deployment"). */
  nullness: (column: string): FieldCompiler => (sql, c) => isNull(sql, column, c.is_null_),
  /** A nested filter object with its own fields. */
  nested: (spec: FilterSpec): FieldCompiler => (sql, c) => [compileFilter(sql, c, spec)]
}

