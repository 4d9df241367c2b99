/** Global concurrency limits (concurrency_limit_v2) in SQL. */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"

export interface GlobalConcurrencyLimitRow {
  readonly id: string
  readonly created: Date
  readonly updated: Date
  readonly active: boolean
  readonly name: string
  readonly limit: number
  readonly active_slots: number
  readonly denied_slots: number
  readonly slot_decay_per_second: number
}

export class ConcurrencyLimitsRepo extends Effect.Service<ConcurrencyLimitsRepo>()("baton/ConcurrencyLimitsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const read = (id: string) =>
      Effect.map(sql<GlobalConcurrencyLimitRow>`SELECT * FROM concurrency_limit_v2 WHERE id = ${id}`, (rows) => rows[0])

    const create = Effect.fn("ConcurrencyLimitsRepo.create")(function* (input: { readonly name: string; readonly limit: number }) {
      const id = yield* newId
      const at = yield* now
      yield* sql`
        INSERT INTO concurrency_limit_v2 (id, created, updated, name, "limit")
        VALUES (${id}, ${at}, ${at}, ${input.name}, ${input.limit})
      `
      return id
    })

    const setLimit = (id: string, limit: number) =>
      Effect.flatMap(now, (at) => sql`UPDATE concurrency_limit_v2 SET "limit" = ${limit}, updated = ${at} WHERE id = ${id}`)

    const remove = (id: string) => sql`DELETE FROM concurrency_limit_v2 WHERE id = ${id}`

    return { read, create, setLimit, remove } as const
  })
}) {}
