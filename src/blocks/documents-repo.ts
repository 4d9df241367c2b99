/** Block documents and the documents they reference, in SQL. `data` is stored as ciphertext. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { inTransaction, isForeignKeyViolation, sqlErrorsAsDefects } from "../database/errors.ts"
import { edgesBelow } from "../database/graph.ts"
import { AsGiven, countWhere, findRowBy, findRowsByIds, IdRow } from "../database/rows.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { BlockDocumentConflict, BlockDocumentNameTaken } from "./errors.ts"
import { BlockDocumentFilter, type BlockDocumentQuery, type BlockDocumentSort } from "./documents-schemas.ts"
import { BlockSchemaFilter, BlockTypeFilter } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

/** A row of `block_document`: a stored document as its row holds it (data still sealed). */
export const DocumentRow = Schema.Struct({
  id: Schema.String,
  created: Schema.DateFromSelf,
  updated: Schema.DateFromSelf,
  name: Schema.String,
  data: Schema.String,
  is_anonymous: Schema.Boolean,
  block_type_name: Schema.NullOr(Schema.String),
  block_type_id: Schema.String,
  block_schema_id: Schema.String
})
export type DocumentRow = typeof DocumentRow.Type

/** A row of `block_document_reference`, one edge of the reference graph: `parent`'s key `name` holds document `reference`. */
export const ReferenceRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  parent_block_document_id: Schema.String,
  reference_block_document_id: Schema.String
})
export type ReferenceRow = typeof ReferenceRow.Type

const ReferrerRow = Schema.Struct({ id: Schema.String, name: Schema.String })

const DOCUMENT_REFERENCES = {
  table: "block_document_reference",
  parent: "parent_block_document_id",
  child: "reference_block_document_id"
} as const

const orderBy: Record<BlockDocumentSort, string> = {
  NAME_ASC: "block_document.name ASC, block_document.id",
  NAME_DESC: "block_document.name DESC, block_document.id",
  BLOCK_TYPE_AND_NAME_ASC: "block_document.block_type_name ASC, block_document.name ASC, block_document.id"
}

const NAMED_ONLY: BlockDocumentFilter = { operator: "and_", is_anonymous: { eq_: false } }

const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((r) => r.id)

/** A write naming a type, schema or document that is gone (deleted since it was checked). */
const missingReferent = <A, E, R>(write: Effect.Effect<A, E, R>) =>
  Effect.catchIf(write, isForeignKeyViolation, () => new BlockDocumentConflict())

export class BlockDocumentsRepo extends Effect.Service<BlockDocumentsRepo>()("baton/BlockDocumentsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const where = (query: BlockDocumentQuery) => sql.and([
      BlockDocumentFilter.compile(sql, query.block_documents ?? NAMED_ONLY),
      query.block_types == null
        ? sql`TRUE`
        : sql`EXISTS (SELECT 1 FROM block_type WHERE block_type.id = block_document.block_type_id
                 AND ${BlockTypeFilter.compile(sql, query.block_types)})`,
      query.block_schemas == null
        ? sql`TRUE`
        : sql`EXISTS (SELECT 1 FROM block_schema WHERE block_schema.id = block_document.block_schema_id
                 AND ${BlockSchemaFilter.compile(sql, query.block_schemas)})`
    ])

    /** The ids of the documents the query matches, in `sort` order (a null limit is no limit). */
    const filteredIds = SqlSchema.findAll({
      Request: AsGiven<BlockDocumentQuery & {
        readonly sort: BlockDocumentSort
        readonly offset: number
        readonly limit: number | null
      }>(),
      Result: IdRow,
      execute: (query) =>
        sql`
          SELECT block_document.id FROM block_document WHERE ${where(query)}
          ORDER BY ${sql.unsafe(orderBy[query.sort])} LIMIT ${query.limit} OFFSET ${query.offset}
        `
    })
    const filterIds = (query: Parameters<typeof filteredIds>[0]) => Effect.map(filteredIds(query), ids)

    const counted = countWhere(sql, "block_document")
    const count = (query: BlockDocumentQuery) => counted(where(query))

    const idByName = SqlSchema.findOne({
      Request: AsGiven<{ readonly slug: string; readonly name: string }>(),
      Result: IdRow,
      execute: ({ name, slug }) =>
        sql`
          SELECT block_document.id FROM block_document JOIN block_type ON block_type.id = block_document.block_type_id
          WHERE block_type.slug = ${slug} AND block_document.name = ${name}
        `
    })

    /** The id of the document named `name` of the type with this slug. */
    const findIdByName = (slug: string, name: string) => Effect.map(idByName({ slug, name }), Option.map((row) => row.id))

    const referencesBelow = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: ReferenceRow,
      execute: (ids) => edgesBelow(sql, DOCUMENT_REFERENCES, ids)
    })

    const documentRows = findRowsByIds(sql, "block_document", DocumentRow)

    /** The documents with these ids and every document they reference, directly or not, with the edges. */
    const readGraph = traced("BlockDocumentsRepo.readGraph")(function* (ids: ReadonlyArray<string>) {
      if (ids.length === 0) return { rows: [] as ReadonlyArray<DocumentRow>, references: [] as ReadonlyArray<ReferenceRow> }
      const references = yield* referencesBelow(ids)
      const all = [...new Set([...ids, ...references.map((r) => r.reference_block_document_id)])]
      const rows = yield* documentRows(all)
      return { rows, references }
    })

    const findRow = findRowBy(sql, "block_document", "id", DocumentRow)

    /** The row of `id`, locked until the transaction ends. */
    const lockRow = SqlSchema.findOne({
      Request: Schema.String,
      Result: DocumentRow,
      execute: (id) => sql`SELECT * FROM block_document WHERE id = ${id} FOR UPDATE`
    })

    const existingRows = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: IdRow,
      execute: (ids) => sql`SELECT id FROM block_document WHERE id = ANY(${ids}::uuid[])`
    })
    const existingIds = (ids: ReadonlyArray<string>) =>
      ids.length === 0 ? Effect.succeed(new Set<string>()) : Effect.map(existingRows(ids), (rows) => new Set(rows.map((r) => r.id)))

    const reachableRows = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: IdRow,
      execute: (from) =>
        sql`
          WITH RECURSIVE reach(id) AS (
            SELECT unnest(${from}::uuid[])
            UNION
            SELECT r.reference_block_document_id FROM block_document_reference r JOIN reach ON r.parent_block_document_id = reach.id
          )
          SELECT id FROM reach
        `
    })

    /** Every document `from` reaches through references (itself included). */
    const reachable = (from: ReadonlyArray<string>) =>
      from.length === 0 ? Effect.succeed(new Set<string>()) : Effect.map(reachableRows(from), (rows) => new Set(rows.map((r) => r.id)))

    /**
     * Creates the document; BlockDocumentNameTaken when its type already has a document of that
     * name, BlockDocumentConflict when its type or schema is gone.
     */
    const insert = traced("BlockDocumentsRepo.insert")(function* (row: Omit<DocumentRow, "id" | "created" | "updated">) {
      const at = yield* now
      const id = yield* newId
      const rows = yield* sql`
        INSERT INTO block_document ${sql.insert({ id, created: at, updated: at, ...row })}
        ON CONFLICT (block_type_id, name) DO NOTHING
        RETURNING id
      `.pipe(missingReferent)
      if (rows.length === 0) return yield* new BlockDocumentNameTaken()
      return id
    })

    /** Sets the given columns (and `updated`); BlockDocumentConflict when a new schema is gone. */
    const update = traced("BlockDocumentsRepo.update")(function* (id: string, changes: Readonly<Record<string, unknown>>) {
      const at = yield* now
      yield* sql`UPDATE block_document SET ${sql.update({ ...changes, updated: at })} WHERE id = ${id}`.pipe(missingReferent)
    })

    const referencesOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: ReferenceRow,
      execute: (parent) =>
        sql`SELECT id, name, parent_block_document_id, reference_block_document_id
            FROM block_document_reference WHERE parent_block_document_id = ${parent}`
    })

    /** Adds the edges; BlockDocumentConflict when a referenced document is gone. */
    const addReferences = traced("BlockDocumentsRepo.addReferences")(function* (
      parent: string,
      references: ReadonlyArray<{ readonly name: string; readonly id: string }>
    ) {
      if (references.length === 0) return
      const at = yield* now
      const rows = []
      for (const r of references) {
        rows.push({
          id: yield* newId,
          created: at,
          updated: at,
          name: r.name,
          parent_block_document_id: parent,
          reference_block_document_id: r.id
        })
      }
      yield* sql`INSERT INTO block_document_reference ${sql.insert(rows)}`.pipe(missingReferent)
    })

    const removeReferences = (ids: ReadonlyArray<string>) =>
      ids.length === 0 ? Effect.void : Effect.asVoid(sql`DELETE FROM block_document_reference WHERE id = ANY(${ids}::uuid[])`)

    /** The documents that reference `id`, by name. */
    const referencedBy = SqlSchema.findAll({
      Request: Schema.String,
      Result: ReferrerRow,
      execute: (id) =>
        sql`
          SELECT d.id, d.name FROM block_document_reference r JOIN block_document d ON d.id = r.parent_block_document_id
          WHERE r.reference_block_document_id = ${id} ORDER BY d.name
        `
    })

    const remove = (id: string) => Effect.map(sql`DELETE FROM block_document WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    /** Runs `effect` in one transaction (whose own statement failures are defects already). */
    const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) => inTransaction(sql, effect)

    return {
      ...sqlErrorsAsDefects({
        filterIds,
        count,
        findIdByName,
        readGraph,
        findRow,
        lockRow,
        existingIds,
        reachable,
        insert,
        update,
        referencesOf,
        addReferences,
        removeReferences,
        referencedBy,
        remove
      }),
      // Outside the wrapper, whose mapped type would lose its type parameters.
      transaction
    } as const
  })
}) {}
