/** Saved searches in SQL. */
import { SqlClient } from "@effect/sql"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { Effect, Option, Schema } from "effect"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { SavedSearchFilter, type SavedSearch } from "./schemas.ts"

const encodeFilters = Schema.encodeSync(Schema.Array(SavedSearchFilter))

export class SavedSearchesRepo extends Effect.Service<SavedSearchesRepo>()("baton/SavedSearchesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Creates the search, or replaces the filters of the one with that name; says which. */
    const upsert = Effect.fn("SavedSearchesRepo.upsert")(function* (input: {
      readonly name: string
      readonly filters: SavedSearch["filters"]
    }) {
      const at = yield* now
      const rows = yield* sql<SavedSearch & { inserted: boolean }>`
        INSERT INTO saved_search (id, created, updated, name, filters)
        VALUES (${yield* newId}, ${at}, ${at}, ${input.name}, ${JSON.stringify(encodeFilters(input.filters))}::jsonb)
        ON CONFLICT (name) DO UPDATE SET filters = EXCLUDED.filters
        RETURNING *, (xmax = 0) AS inserted
      `
      const { inserted, ...search } = rows[0]!
      return { search, created: inserted }
    })

    const find = (id: string) =>
      Effect.map(sql<SavedSearch>`SELECT * FROM saved_search WHERE id = ${id}`, (rows) => Option.fromNullable(rows[0]))

    const filter = (options: { readonly offset: number; readonly limit: number }) =>
      sql<SavedSearch>`SELECT * FROM saved_search ORDER BY name, id LIMIT ${options.limit} OFFSET ${options.offset}`

    const remove = (id: string) => Effect.map(sql`DELETE FROM saved_search WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    return sqlErrorsAsDefects({ upsert, find, filter, remove })
  })
}) {}
