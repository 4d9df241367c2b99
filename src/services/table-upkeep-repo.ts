/** The dead rows of Baton's churning tables, and their VACUUM. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Tables whose rows are written and deleted again all the time (a queue, a log of changes folded
 * away): each holds few live rows and, left alone, ever more dead ones, which every scan of it and
 * every write to it then step over.
 */
export const CHURNING_TABLES = [
  "flow_run_rollup_delta",
  "event_outbox",
  "concurrency_lease",
  "task_run_delivery",
  "automation_bucket"
] as const
export type ChurningTable = typeof CHURNING_TABLES[number]

export class TableUpkeepRepo extends Effect.Service<TableUpkeepRepo>()("baton/TableUpkeepRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The dead rows PostgreSQL's statistics count in each of `tables` (of the current schema). */
    const deadRows = (tables: ReadonlyArray<ChurningTable>) =>
      Effect.map(
        sql<{ table: ChurningTable; dead: string }>`
          SELECT relname AS table, n_dead_tup AS dead FROM pg_stat_user_tables
          WHERE relname = ANY(${tables}::text[]) AND schemaname = current_schema()
        `,
        (rows) => new Map(rows.map((row) => [row.table, Number(row.dead)]))
      )

    /**
     * VACUUMs `table` (outside any transaction, as VACUUM must run); skipped at once when another
     * VACUUM of it holds the table (another process's upkeep, or autovacuum).
     */
    const vacuum = (table: ChurningTable) => Effect.asVoid(sql.unsafe(`VACUUM (SKIP_LOCKED) ${table}`))

    return { deadRows, vacuum }
  })
}) {}
