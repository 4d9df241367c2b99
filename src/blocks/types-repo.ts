/** Block types in SQL. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven, type Page, findRowBy, findRowsByIds, pageOf } from "../database/rows.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { BlockTypeNameTaken } from "./errors.ts"
import { BlockSchemaFilter, BlockType, BlockTypeFilter } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

/** A block type's own fields. */
export type BlockTypeValues = Omit<BlockType, "id" | "created" | "updated" | "is_protected">

/** A row of `block_type`: its wire record, decoded (its timestamps Dates). */
export const BlockTypeRow = Schema.typeSchema(BlockType)

/** A row to insert: the type's values with its id, times and protection. */
type NewBlockType = BlockTypeValues & { readonly id: string; readonly created: Date; readonly updated: Date; readonly is_protected: boolean }

export class BlockTypesRepo extends Effect.Service<BlockTypesRepo>()("baton/BlockTypesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const insert = SqlSchema.findOne({
      Request: AsGiven<NewBlockType>(),
      Result: BlockTypeRow,
      execute: (row) => sql`INSERT INTO block_type ${sql.insert(row)} ON CONFLICT (slug) DO NOTHING RETURNING *`
    })

    const insertOrUpdateMany = SqlSchema.findAll({
      Request: Schema.Array(AsGiven<NewBlockType>()),
      Result: BlockTypeRow,
      execute: (rows) =>
        sql`
          INSERT INTO block_type ${sql.insert(rows)}
          ON CONFLICT (slug) DO UPDATE SET
            name = EXCLUDED.name, logo_url = EXCLUDED.logo_url, documentation_url = EXCLUDED.documentation_url,
            description = EXCLUDED.description, code_example = EXCLUDED.code_example,
            is_protected = EXCLUDED.is_protected, updated = EXCLUDED.updated
          RETURNING *
        `
    })

    /** Creates the type; BlockTypeNameTaken when its slug is taken. */
    const create = traced("BlockTypesRepo.create")(function* (values: BlockTypeValues) {
      const at = yield* now
      const inserted = yield* insert({ id: yield* newId, created: at, updated: at, ...values, is_protected: false })
      if (Option.isNone(inserted)) return yield* new BlockTypeNameTaken({ detail: `Block type with name "${values.name}" already exists` })
      return inserted.value
    })

    /**
     * Creates each type, or makes the one with its slug match its values (keeping its id), in one
     * statement (their slugs distinct); the rows, in no particular order.
     */
    const upsertMany = traced("BlockTypesRepo.upsertMany")(function* (
      values: ReadonlyArray<BlockTypeValues & { readonly is_protected: boolean }>
    ) {
      if (values.length === 0) return []
      const at = yield* now
      const rows: Array<NewBlockType> = []
      for (const value of values) rows.push({ id: yield* newId, created: at, updated: at, ...value })
      return yield* insertOrUpdateMany(rows)
    })

    const find = findRowBy(sql, "block_type", "id", BlockTypeRow)

    const findBySlug = findRowBy(sql, "block_type", "slug", BlockTypeRow)

    const findMany = findRowsByIds(sql, "block_type", BlockTypeRow)
    const readMany = (ids: ReadonlyArray<string>) => (ids.length === 0 ? Effect.succeed([]) : findMany(ids))

    /** Types by name; a type matches `block_schemas` when one of its schemas does. */
    const page = pageOf(sql, "block_type", BlockTypeRow)
    const filter = (options: { readonly block_types: BlockTypeFilter | null | undefined; readonly block_schemas: BlockSchemaFilter | null | undefined } & Page) => {
      const withSchemas = options.block_schemas == null
        ? sql`TRUE`
        : sql`EXISTS (SELECT 1 FROM block_schema WHERE block_schema.block_type_id = block_type.id
                AND ${BlockSchemaFilter.compile(sql, options.block_schemas)})`
      return page(sql`${BlockTypeFilter.compile(sql, options.block_types)} AND ${withSchemas}`, "name ASC, id", options)
    }

    /** Sets the given columns (and `updated`); false when there is no such type. */
    const update = traced("BlockTypesRepo.update")(function* (id: string, changes: Readonly<Record<string, unknown>>) {
      const at = yield* now
      const rows = yield* sql`UPDATE block_type SET ${sql.update({ ...changes, updated: at })} WHERE id = ${id} RETURNING id`
      return rows.length > 0
    })

    const remove = (id: string) => Effect.map(sql`DELETE FROM block_type WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    return sqlErrorsAsDefects({ create, upsertMany, find, findBySlug, readMany, filter, update, remove })
  })
}) {}
