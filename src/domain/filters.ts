/**
 * The one filter compiler: the reference's filter objects (`operator` and_/or_, `any_`, `not_any_`,
 * `all_`, `like_`, `startswith_`, `before_`, `after_`, `is_null_` …) turned into SQL conditions.
 *
 * An area declares a filter once, as criteria (`Filter.make("FlowFilter", { name: Criterion.text(…) })`):
 * each criterion gives both its wire schema (only the keys the reference accepts, under the
 * reference's schema name) and its SQL, so the two cannot drift apart, and the filter's `compile`
 * takes the schema's decoded type.
 */
import type { Statement } from "@effect/sql"
import type { SqlClient } from "@effect/sql/SqlClient"
import { Schema } from "effect"
import * as Lax from "./lax.ts"
import { Timestamp } from "./time.ts"

export const Operator = Schema.Literal("and_", "or_").annotations({ identifier: "Operator" })

/** A filter object: unknown fields are rejected, as the reference does (422 extra_forbidden). */
export const strictStruct = <Fields extends Schema.Struct.Fields>(fields: Fields, identifier: string) =>
  Schema.Struct(fields).annotations({ identifier, parseOptions: { onExcessProperty: "error" } })

/** An optional, nullable criterion. */
export const criterion = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.NullOr(schema))

/** An operator field with the reference's default. */
export const operatorField = Schema.optionalWith(Operator, { default: () => "and_" as const })

type Fragment = Statement.Fragment

/** One criterion object as conditions on a column (the SQL behind each kind of `Criterion`). */
type FieldCompiler = (sql: SqlClient, criterion: any) => ReadonlyArray<Fragment>

const combine = (sql: SqlClient, operator: unknown, conditions: ReadonlyArray<Fragment>): Fragment =>
  conditions.length === 0 ? sql`TRUE` : operator === "or_" ? sql.or(conditions) : sql.and(conditions)

const col = (sql: SqlClient, column: string) => sql.unsafe(column)

const isNull = (sql: SqlClient, column: string, value: unknown): ReadonlyArray<Fragment> =>
  value === true ? [sql`${col(sql, column)} IS NULL`] : value === false ? [sql`${col(sql, column)} IS NOT NULL`] : []

/** The SQL of the reference's kinds of criteria, for `Criterion` and custom criteria. `pgType` is the column's type for arrays. */
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
  nullness: (column: string): FieldCompiler => (sql, c) => isNull(sql, column, c.is_null_)
}


/**
 * One criterion of a filter: the schema of its object, its field in the filter (optional and
 * nullable, or with a default), and that object as conditions.
 */
export interface Criterion<A, I = unknown, P extends Schema.PropertySignature.All = Optional<Schema.Schema<A, I>>> {
  readonly schema: Schema.Schema<A, I>
  readonly property: P
  readonly compile: (sql: SqlClient, value: A) => ReadonlyArray<Fragment>
}

type AnyCriterion = Criterion<any, any, Schema.PropertySignature.All>
type CriterionMap = Readonly<Record<string, AnyCriterion>>

type Optional<S extends Schema.Schema.Any> = Schema.optional<Schema.NullOr<S>>

type CriteriaFields<C extends CriterionMap> = { readonly [K in keyof C]: C[K]["property"] }

/** The fields a filter's criteria make, beside the operator that joins them (and_ unless given). */
type FilterFields<C extends CriterionMap> = { readonly operator: typeof operatorField } & CriteriaFields<C>

/** A filter's schema, with its compiler. */
export type FilterSchema<C extends CriterionMap, Fields extends Schema.Struct.Fields = FilterFields<C>> = Schema.Struct<Fields> & {
  readonly criteria: C
  /** The filter as one condition (TRUE for none); its `operator` joins its criteria. */
  readonly compile: (sql: SqlClient, value: Schema.Struct.Type<Fields> | null | undefined) => Fragment
}

/** A struct of the keys picked from `fields`, in the order picked. */
const picked = <F extends Schema.Struct.Fields, K extends keyof F & string>(fields: F, keys: ReadonlyArray<K>) =>
  Object.fromEntries(keys.map((key) => [key, fields[key]])) as unknown as Pick<F, K>

const criterionOf = <Fields extends Schema.Struct.Fields>(
  identifier: string,
  fields: Fields,
  compile: (sql: SqlClient, value: Schema.Struct.Type<Fields>) => ReadonlyArray<Fragment>
): Criterion<Schema.Struct.Type<Fields>, Schema.Struct.Encoded<Fields>> => {
  const schema = strictStruct(fields, identifier) as unknown as Schema.Schema<Schema.Struct.Type<Fields>, Schema.Struct.Encoded<Fields>>
  return { schema, property: criterion(schema), compile }
}

const listOf = <S extends Schema.Schema.Any>(element: S) => criterion(Schema.Array(element))
const flag = criterion(Lax.Bool)
const at = criterion(Timestamp)

const oneOfFields = <S extends Schema.Schema.Any>(element: S) => ({
  operator: operatorField,
  any_: listOf(element),
  not_any_: listOf(element),
  is_null_: flag
})
const textFields = {
  ...oneOfFields(Schema.String),
  like_: criterion(Schema.String),
  startswith_: listOf(Schema.String)
}
const tagsFields = { operator: operatorField, all_: listOf(Schema.String), any_: listOf(Schema.String), is_null_: flag }
const timeFields = { before_: at, after_: at, is_null_: flag }
const rangeFields = { ge_: criterion(Lax.Int), le_: criterion(Lax.Int), is_null_: flag }

/**
 * The kinds of criteria the reference's filters use. Each takes the reference's schema name, the
 * column, and the keys the reference accepts for that criterion (any other key is a 422).
 */
export const Criterion = {
  /** any_ (IN), not_any_ (NOT IN), is_null_ over values of `element`. */
  oneOf: <S extends Schema.Schema.Any, K extends keyof ReturnType<typeof oneOfFields<S>> & string>(
    identifier: string,
    column: string,
    pgType: "uuid" | "text",
    element: S,
    keys: ReadonlyArray<K>
  ) => criterionOf(identifier, picked(oneOfFields(element), keys), (sql, c) => Field.oneOf(column, pgType)(sql, c)),
  /** any_, not_any_, like_ (ILIKE %x%), startswith_, is_null_ over a text column. */
  text: <K extends keyof typeof textFields & string>(identifier: string, column: string, keys: ReadonlyArray<K>) =>
    criterionOf(identifier, picked(textFields, keys), (sql, c) => Field.text(column)(sql, c)),
  /** all_, any_, is_null_ (empty) over a jsonb array of strings. */
  tags: <K extends keyof typeof tagsFields & string>(identifier: string, column: string, keys: ReadonlyArray<K>) =>
    criterionOf(identifier, picked(tagsFields, keys), (sql, c) => Field.tags(column)(sql, c)),
  /** before_ (<=), after_ (>=), is_null_ over a timestamp column. */
  time: <K extends keyof typeof timeFields & string>(identifier: string, column: string, keys: ReadonlyArray<K>) =>
    criterionOf(identifier, picked(timeFields, keys), (sql, c) => Field.time(column)(sql, c)),
  /** ge_ (>=), le_ (<=) over an integer column. */
  range: <K extends keyof typeof rangeFields & string>(identifier: string, column: string, keys: ReadonlyArray<K>) =>
    criterionOf(identifier, picked(rangeFields, keys), (sql, c) => Field.range(column)(sql, c)),
  /** A criterion of its own shape, with its own SQL. */
  custom: criterionOf,
  /** A filter inside a filter (e.g. a run's `state` with its `type` and `name`). */
  nested: <C extends CriterionMap>(filter: FilterSchema<C>): Criterion<Schema.Struct.Type<FilterFields<C>>, Schema.Struct.Encoded<FilterFields<C>>> => {
    const schema = filter as unknown as Schema.Schema<Schema.Struct.Type<FilterFields<C>>, Schema.Struct.Encoded<FilterFields<C>>>
    return { schema, property: criterion(schema), compile: (sql, value) => [filter.compile(sql, value)] }
  },
  /** The criterion, applied as `value` when a filter does not give it (null still means none). */
  withDefault: <A, I>(
    of: Criterion<A, I>,
    value: () => A
  ): Criterion<A, I, Schema.optionalWith<Schema.NullOr<Schema.Schema<A, I>>, { default: () => A }>> => ({
    ...of,
    property: Schema.optionalWith(Schema.NullOr(of.schema), { default: value })
  })
}

const makeFilter = (identifier: string, criteria: CriterionMap, withOperator: boolean) => {
  const own = Object.fromEntries((Object.entries(criteria) as Array<[string, AnyCriterion]>).map(([key, c]) => [key, c.property]))
  const schema = strictStruct(withOperator ? { operator: operatorField, ...own } : own, identifier)
  const compile = (sql: SqlClient, value: Readonly<Record<string, any>> | null | undefined): Fragment => {
    if (value === null || value === undefined) return sql`TRUE`
    const conditions: Array<Fragment> = []
    for (const [key, c] of Object.entries(criteria) as Array<[string, AnyCriterion]>) {
      const given = value[key]
      if (given === null || given === undefined) continue
      const conditionsOf = c.compile(sql, given)
      if (conditionsOf.length > 0) conditions.push(combine(sql, given.operator, conditionsOf))
    }
    return combine(sql, value.operator, conditions)
  }
  return Object.assign(schema, { criteria, compile })
}

export const Filter = {
  /** A filter of `criteria`, under the reference's schema name. */
  make: <C extends CriterionMap>(identifier: string, criteria: C): FilterSchema<C> =>
    makeFilter(identifier, criteria, true) as unknown as FilterSchema<C>,
  /** A filter whose criteria all apply (the reference gives it no operator). */
  all: <C extends CriterionMap>(identifier: string, criteria: C): FilterSchema<C, CriteriaFields<C>> =>
    makeFilter(identifier, criteria, false) as unknown as FilterSchema<C, CriteriaFields<C>>
}
