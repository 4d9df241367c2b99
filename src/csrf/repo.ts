/** CSRF tokens in SQL: one per client, replaced each time the client asks for one. */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import type { CsrfToken } from "./api.ts"

export class CsrfTokensRepo extends Effect.Service<CsrfTokensRepo>()("baton/CsrfTokensRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Gives `client` the token `token` until `expiration` (its previous token stops working). */
    const issue = Effect.fn("CsrfTokensRepo.issue")(function* (client: string, token: string, expiration: Date) {
      const at = yield* now
      const rows = yield* sql<CsrfToken>`
        INSERT INTO csrf_token (id, created, updated, token, client, expiration)
        VALUES (${yield* newId}, ${at}, ${at}, ${token}, ${client}, ${expiration})
        ON CONFLICT (client) DO UPDATE SET token = EXCLUDED.token, expiration = EXCLUDED.expiration, updated = EXCLUDED.updated
        RETURNING *
      `
      return rows[0]!
    })

    /** The token of `client` that has not expired by `at`. */
    const validToken = (client: string, at: Date) =>
      Effect.map(
        sql<{ token: string }>`SELECT token FROM csrf_token WHERE client = ${client} AND expiration > ${at}`,
        (rows) => Option.fromNullable(rows[0]?.token)
      )

    const deleteExpired = (at: Date) => Effect.asVoid(sql`DELETE FROM csrf_token WHERE expiration < ${at}`)

    return sqlErrorsAsDefects({ issue, validToken, deleteExpired })
  })
}) {}
