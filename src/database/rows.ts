/**
 * Pieces of the row schemas repositories read their tables through (`SqlSchema` of @effect/sql).
 * What the driver gives: jsonb parsed, timestamptz as a Date, bigint (a `count(*)`) and numeric as
 * strings.
 */
import { type SqlClient, SqlSchema } from "@effect/sql"
import { Schema } from "effect"

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
