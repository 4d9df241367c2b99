/** The pause expirations service's query. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"

export class PauseExpirationsRepo extends Effect.Service<PauseExpirationsRepo>()("baton/PauseExpirationsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Paused runs whose pause timed out before `at`, at most `limit`; runs held by another transaction are left for the next pass. */
    const expiredPauses = (at: Date, limit: number) =>
      Effect.map(
        sql<{ id: string }>`
          SELECT flow_run.id FROM flow_run JOIN flow_run_state s ON s.id = flow_run.state_id
          WHERE flow_run.state_type = 'PAUSED' AND (s.state_details ->> 'pause_timeout')::timestamptz < ${at}
          ORDER BY flow_run.id
          LIMIT ${limit}
          FOR UPDATE OF flow_run SKIP LOCKED
        `,
        (rows) => rows.map((r) => r.id)
      )

    return sqlErrorsAsDefects({ expiredPauses })
  })
}) {}
