import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Task run cache entries by the state they point at. A cache entry goes with its state (ON DELETE
 * CASCADE), and without this index PostgreSQL found a deleted state's entries by reading the whole
 * cache: once per state deleted, whether by the database vacuum, a deleted flow run or a deleted
 * task run. Over 1M runs with 310,000 task runs and 200,000 cache entries (`EXPLAIN ANALYZE`), a
 * vacuum batch of 200 runs whose 50 task run states had entries took 574 ms, 547 of them in these
 * lookups (11 ms a state); with the index each is a probe.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE INDEX IF NOT EXISTS ix_task_run_state_cache__task_run_state_id ON task_run_state_cache (task_run_state_id)
  `
})
