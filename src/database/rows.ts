/**
 * Pieces of the row schemas repositories read their tables through (`SqlSchema` of @effect/sql).
 * What the driver gives: jsonb parsed, timestamptz as a Date, bigint (a `count(*)`) and numeric as
 * strings.
 */
import { type SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Effect, Schema } from "effect"

/** `count(*) AS count`: a bigint, which the driver gives as a string. */
export const CountRow = Schema.Struct({ count: Schema.NumberFromString })

/** A row with only its id (`RETURNING id`). */
export const IdRow = Schema.Struct({ id: Schema.String })

/**
 * The request schema of a statement whose arguments go in as the repository was given them: values
 * the handlers decoded already (filters, sorts, pages), not to encode or check a second time.
 */
export const AsGiven = <A>(): Schema.Schema<A> => Schema.Any

/**
 * The row of `table` whose `column` (its id, or a unique name) holds the given value, read through
 * its row schema: the lookup most repositories have.
 */
export const findRowBy = <A, I, R>(sql: SqlClient.SqlClient, table: string, column: string, Result: Schema.Schema<A, I, R>) =>
  SqlSchema.findOne({
    Request: Schema.String,
    Result,
    execute: (value) => sql`SELECT * FROM ${sql(table)} WHERE ${sql(column)} = ${value}`
  })

/** The rows of `table` with these ids, read through its row schema (in no particular order). */
export const findRowsByIds = <A, I, R>(sql: SqlClient.SqlClient, table: string, Result: Schema.Schema<A, I, R>) =>
  SqlSchema.findAll({
    Request: Schema.Array(Schema.String),
    Result,
    execute: (ids) => sql`SELECT * FROM ${sql(table)} WHERE id = ANY(${ids}::uuid[])`
  })

/** A page of a listing: the rows to skip and how many to take. */
export interface Page {
  readonly offset: number
  readonly limit: number
}

/** A page of a listing in one of its sort orders. */
export interface SortedPage<S> extends Page {
  readonly sort: S
}

/**
 * One page of the rows of `table` that `condition` keeps, in `order` (an ORDER BY list the
 * repository owns, never a value from a request), read through its row schema: the filter most
 * repositories have. A null limit is no limit.
 */
export const pageOf = <A, I, R>(sql: SqlClient.SqlClient, table: string, Result: Schema.Schema<A, I, R>) => {
  const decode = Schema.decodeUnknown(Schema.Array(Result))
  return (condition: Statement.Fragment, order: string, page: { readonly offset: number; readonly limit: number | null }) =>
    Effect.flatMap(
      sql`SELECT * FROM ${sql(table)} WHERE ${condition} ORDER BY ${sql.unsafe(order)} LIMIT ${page.limit} OFFSET ${page.offset}`,
      decode
    )
}

const decodeCounts = Schema.decodeUnknown(Schema.Tuple(CountRow))

/** How many rows of `table` `condition` keeps: the count most repositories have. */
export const countWhere = (sql: SqlClient.SqlClient, table: string) => (condition: Statement.Fragment) =>
  Effect.map(
    Effect.flatMap(sql`SELECT count(*) AS count FROM ${sql(table)} WHERE ${condition}`, decodeCounts),
    ([row]) => row.count
  )
