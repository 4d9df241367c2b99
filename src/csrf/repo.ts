/** CSRF tokens in SQL: one per client, replaced each time the client asks for one. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven } from "../database/rows.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { CsrfToken } from "./api.ts"
import { traced } from "../domain/traced.ts"

/** A row of `csrf_token`: its wire record, decoded (its timestamps Dates). */
export const CsrfTokenRow = Schema.typeSchema(CsrfToken)

const TokenRow = Schema.Struct({ token: Schema.String })

export class CsrfTokensRepo extends Effect.Service<CsrfTokensRepo>()("baton/CsrfTokensRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const upsert = SqlSchema.single({
      Request: AsGiven<{ id: string; at: Date; client: string; token: string; expiration: Date }>(),
      Result: CsrfTokenRow,
      execute: (row) =>
        sql`
          INSERT INTO csrf_token (id, created, updated, token, client, expiration)
          VALUES (${row.id}, ${row.at}, ${row.at}, ${row.token}, ${row.client}, ${row.expiration})
          ON CONFLICT (client) DO UPDATE SET token = EXCLUDED.token, expiration = EXCLUDED.expiration, updated = EXCLUDED.updated
          RETURNING *
        `
    })

    /** Gives `client` the token `token` until `expiration` (its previous token stops working). */
    const issue = traced("CsrfTokensRepo.issue")(function* (client: string, token: string, expiration: Date) {
      return yield* upsert({ id: yield* newId, at: yield* now, client, token, expiration })
    })

    const findToken = SqlSchema.findOne({
      Request: AsGiven<{ readonly client: string; readonly at: Date }>(),
      Result: TokenRow,
      execute: ({ at, client }) => sql`SELECT token FROM csrf_token WHERE client = ${client} AND expiration > ${at}`
    })

    /** The token of `client` that has not expired by `at`. */
    const validToken = (client: string, at: Date) => Effect.map(findToken({ client, at }), Option.map((row) => row.token))

    const deleteExpired = (at: Date) => Effect.asVoid(sql`DELETE FROM csrf_token WHERE expiration < ${at}`)

    return sqlErrorsAsDefects({ issue, validToken, deleteExpired })
  })
}) {}
