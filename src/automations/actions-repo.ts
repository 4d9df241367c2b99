/** The actions of firings waiting to be performed, in SQL (automations/actions.ts). */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"

export class TriggeredActionsRepo extends Effect.Service<TriggeredActionsRepo>()("baton/TriggeredActionsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Stores the actions (id and JSON body), in the current transaction when there is one. */
    const add = (actions: ReadonlyArray<{ readonly id: string; readonly body: unknown }>) =>
      actions.length === 0
        ? Effect.void
        : Effect.asVoid(sql`
          INSERT INTO automation_triggered_action (id, body)
          SELECT r.id, r.body FROM jsonb_to_recordset(${JSON.stringify(actions)}::jsonb) AS r(id uuid, body jsonb)
          ON CONFLICT (id) DO NOTHING
        `)

    /**
     * Claims up to `limit` actions no one holds (or whose claim ran out by `at`) until `until`, oldest
     * first; their bodies. Two processes never claim one action at once (FOR UPDATE SKIP LOCKED).
     */
    const claim = (at: Date, until: Date, limit: number) =>
      Effect.map(
        sql<{ body: unknown; seq: string }>`
          UPDATE automation_triggered_action SET claimed_until = ${until}
          WHERE id IN (
            SELECT id FROM automation_triggered_action WHERE claimed_until IS NULL OR claimed_until < ${at}
            ORDER BY seq LIMIT ${limit} FOR UPDATE SKIP LOCKED
          )
          RETURNING body, seq
        `,
        (rows) => [...rows].sort((a, b) => Number(a.seq) - Number(b.seq)).map((row) => row.body)
      )

    /** The action was performed (and its events written, in the same transaction). */
    const done = (id: string) => Effect.asVoid(sql`DELETE FROM automation_triggered_action WHERE id = ${id}`)

    return sqlErrorsAsDefects({ add, claim, done })
  })
}) {}
