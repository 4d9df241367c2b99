/**
 * Table upkeep: the churning tables are vacuumed once they hold DEAD_ROWS_TO_VACUUM dead rows, and
 * left alone below it, whatever autovacuum does (it is off on the test server, and the embedded
 * database never runs it).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { CHURNING_TABLES, TableUpkeepRepo } from "../../src/services/table-upkeep-repo.ts"
import { DEAD_ROWS_TO_VACUUM, keepTables } from "../../src/services/table-upkeep.ts"
import { TestDatabase } from "../support/database.ts"

const outboxStats = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ dead: string; vacuums: string }>`
      SELECT n_dead_tup AS dead, vacuum_count + autovacuum_count AS vacuums FROM pg_stat_user_tables
      WHERE relname = 'event_outbox' AND schemaname = current_schema()
    `,
    (rows) => ({ dead: Number(rows[0]?.dead ?? 0), vacuums: Number(rows[0]?.vacuums ?? 0) })
  ))

/** Notes written and taken again, as the relay takes them; the statistics told at once. */
const churn = (notes: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      yield* sql`INSERT INTO event_outbox (body) SELECT jsonb_build_object('type', 'upkeep-test', 'n', i) FROM generate_series(1, ${notes}) i`
      yield* sql`DELETE FROM event_outbox WHERE body->>'type' = 'upkeep-test'`
      yield* sql`SELECT pg_stat_force_next_flush()`
    }))

/** The outbox's statistics once its dead rows are counted (they are told within a second or so). */
const deadCounted = (atLeast: number) =>
  Effect.gen(function* () {
    for (let i = 0; i < 100; i++) {
      const stats = yield* outboxStats
      if (stats.dead >= atLeast) return stats
      // Real time: the statistics are told by the server's clock, not the test's.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
    }
    return yield* outboxStats
  })

describe("table upkeep", () => {
  it.layer(TableUpkeepRepo.Default.pipe(Layer.provideMerge(TestDatabase)), { timeout: 60_000 })((it) => {
    it.effect("vacuums a churning table once its dead rows pass the threshold, and leaves it alone below", () =>
      Effect.gen(function* () {
        // Whatever earlier statements left: a clean start.
        yield* Effect.flatMap(TableUpkeepRepo, (repo) => Effect.forEach(CHURNING_TABLES, repo.vacuum))

        yield* churn(DEAD_ROWS_TO_VACUUM + 500)
        const before = yield* deadCounted(DEAD_ROWS_TO_VACUUM + 500)
        expect(before.dead).toBeGreaterThanOrEqual(DEAD_ROWS_TO_VACUUM + 500)

        expect(yield* keepTables).toEqual(["event_outbox"])
        const after = yield* outboxStats
        expect(after.vacuums).toBe(before.vacuums + 1)
        expect(after.dead).toBe(0)

        // A few dead rows: not worth a VACUUM.
        yield* churn(10)
        expect((yield* deadCounted(10)).dead).toBeGreaterThanOrEqual(10)
        expect(yield* keepTables).toEqual([])
        expect((yield* outboxStats).vacuums).toBe(after.vacuums)
      }))
  })
})
