/** How many rows of a table a statement read: for tests that hold a query to an index. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Rows of `table` read so far in this transaction (index fetches and sequential reads), from pg_stat_xact_user_tables. */
const rowsRead = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ read: string }>`
        SELECT (coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0))::text AS read
        FROM pg_stat_xact_user_tables WHERE relname = ${table}
      `,
      (rows) => Number(rows[0]?.read ?? 0)
    ))

/** Runs `effect` in one transaction: what it returns, and how many rows of `table` it read. */
export const readingRows = <A, E, R>(table: string, effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(Effect.gen(function* () {
      const before = yield* rowsRead(table)
      const result = yield* effect
      return { result, read: (yield* rowsRead(table)) - before }
    })))
