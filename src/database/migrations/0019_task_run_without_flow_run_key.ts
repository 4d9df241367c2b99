import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A task run without a flow run is known by its task key and dynamic key alone: a repeated create
 * answers the run already there. The unique constraint on (flow_run_id, task_key, dynamic_key) never
 * sees two NULL flow run ids as equal, so these runs get their own partial unique index, which two
 * concurrent creates cannot race past.
 *
 * Runs created twice before this index existed keep their data: all but the oldest of each key
 * have their run's id appended to their dynamic key, so no future create ever matches them. Writers
 * wait meanwhile (readers do not), so no new duplicate arrives between that and the index.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`LOCK TABLE task_run IN SHARE ROW EXCLUSIVE MODE`
  yield* sql`
    UPDATE task_run SET dynamic_key = task_run.dynamic_key || ':' || task_run.id::text
    FROM (
      SELECT id, row_number() OVER (PARTITION BY task_key, dynamic_key ORDER BY created, id) AS n
      FROM task_run WHERE flow_run_id IS NULL
    ) duplicate
    WHERE task_run.id = duplicate.id AND duplicate.n > 1
  `
  yield* sql`
    CREATE UNIQUE INDEX uq_task_run__task_key_dynamic_key_without_flow_run
    ON task_run (task_key, dynamic_key) WHERE flow_run_id IS NULL
  `
})
