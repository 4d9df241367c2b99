/** Saved searches in SQL. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven, findRowBy } from "../database/rows.ts"
import { Effect, Schema } from "effect"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { SavedSearch, SavedSearchFilter } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

const encodeFilters = Schema.encodeSync(Schema.Array(SavedSearchFilter))

/** A row of `saved_search`: its wire record, decoded (its timestamps Dates, its filters parsed jsonb). */
export const SavedSearchRow = Schema.typeSchema(SavedSearch)

/** A row the upsert returns: whether it was inserted (rather than updated) beside the search. */
const UpsertedRow = Schema.extend(SavedSearchRow, Schema.Struct({ inserted: Schema.Boolean }))

interface NewSavedSearch {
  readonly id: string
  readonly at: Date
  readonly name: string
  readonly filters: SavedSearch["filters"]
}

export class SavedSearchesRepo extends Effect.Service<SavedSearchesRepo>()("baton/SavedSearchesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const upsertRow = SqlSchema.single({
      Request: AsGiven<NewSavedSearch>(),
      Result: UpsertedRow,
      execute: (search) =>
        sql`
          INSERT INTO saved_search (id, created, updated, name, filters)
          VALUES (${search.id}, ${search.at}, ${search.at}, ${search.name},
                  ${JSON.stringify(encodeFilters(search.filters))}::jsonb)
          ON CONFLICT (name) DO UPDATE SET filters = EXCLUDED.filters
          RETURNING *, (xmax = 0) AS inserted
        `
    })

    /** Creates the search, or replaces the filters of the one with that name; says which. */
    const upsert = traced("SavedSearchesRepo.upsert")(function* (input: {
      readonly name: string
      readonly filters: SavedSearch["filters"]
    }) {
      const { inserted, ...search } = yield* upsertRow({ ...input, id: yield* newId, at: yield* now })
      return { search, created: inserted }
    })

    const find = findRowBy(sql, "saved_search", "id", SavedSearchRow)

    const filter = SqlSchema.findAll({
      Request: AsGiven<{ readonly offset: number; readonly limit: number }>(),
      Result: SavedSearchRow,
      execute: (page) => sql`SELECT * FROM saved_search ORDER BY name, id LIMIT ${page.limit} OFFSET ${page.offset}`
    })

    const remove = (id: string) => Effect.map(sql`DELETE FROM saved_search WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    return sqlErrorsAsDefects({ upsert, find, filter, remove })
  })
}) {}
