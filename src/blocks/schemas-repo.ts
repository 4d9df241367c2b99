/**
 * Block schemas in SQL. A schema that nests other blocks is stored as its own row plus one row per
 * nested block's schema, joined by block_schema_reference rows; reading puts the nested schemas back
 * into `fields` (block_schema_references and definitions) as the client sent them.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { inTransaction, isForeignKeyViolation, sqlErrorsAsDefects } from "../database/errors.ts"
import { edgesBelow } from "../database/graph.ts"
import { AsGiven, IdRow, type Page, findRowsByIds } from "../database/rows.ts"
import { newId } from "../domain/ids.ts"
import { isObject, JsonObject } from "../domain/schemas.ts"
import { now } from "../domain/time.ts"
import { BlockSchemaConflict } from "./errors.ts"
import { type BlockSchema, BlockSchemaFilter, type BlockType, type SchemaReference } from "./schemas.ts"
import { BlockTypesRepo } from "./types-repo.ts"
import { traced } from "../domain/traced.ts"

/**
 * A row of `block_schema`. Not the wire's record: the fields are stored without the nested schemas
 * (rebuilt from the reference rows), and the type comes from its own table.
 */
const SchemaRow = Schema.Struct({
  id: Schema.String,
  created: Schema.DateFromSelf,
  updated: Schema.DateFromSelf,
  checksum: Schema.String,
  fields: JsonObject,
  capabilities: Schema.Array(Schema.String),
  version: Schema.String,
  block_type_id: Schema.String
})
type SchemaRow = typeof SchemaRow.Type

const SCHEMA_REFERENCES = {
  table: "block_schema_reference",
  parent: "parent_block_schema_id",
  child: "reference_block_schema_id"
} as const

/** A row of `block_schema_reference`: `parent`'s property `name` holds a block of schema `reference`. */
const ReferenceRow = Schema.Struct({
  name: Schema.String,
  parent_block_schema_id: Schema.String,
  reference_block_schema_id: Schema.String
})
type ReferenceRow = typeof ReferenceRow.Type

/** What a block document needs of its schema: its type and capabilities, and which fields are secret. */
const SchemaSummaryRow = Schema.Struct({
  block_type_id: Schema.String,
  capabilities: Schema.Array(Schema.String),
  secret_fields: Schema.Unknown
})

const sameReference = (a: unknown, b: SchemaReference) =>
  isObject(a) && a.block_schema_checksum === b.block_schema_checksum && a.block_type_slug === b.block_type_slug

/**
 * The fields of `id` as clients know them: its stored fields, its references rebuilt from the
 * reference rows (a list where several share a property, as unions do), and each nested schema
 * (itself rebuilt) under its title in `definitions`.
 */
const rebuildFields = (
  id: string,
  rows: ReadonlyMap<string, SchemaRow>,
  references: ReadonlyMap<string, ReadonlyArray<ReferenceRow>>,
  types: ReadonlyMap<string, BlockType>,
  path: ReadonlySet<string> = new Set()
): Record<string, unknown> => {
  const row = rows.get(id)!
  const refs: Record<string, unknown> = {}
  let definitions: Record<string, unknown> = {}
  for (const reference of references.get(id) ?? []) {
    const child = rows.get(reference.reference_block_schema_id)
    if (child === undefined || path.has(child.id)) continue
    const entry: SchemaReference = {
      block_schema_checksum: child.checksum,
      block_type_slug: types.get(child.block_type_id)?.slug ?? ""
    }
    const current = refs[reference.name]
    if (current === undefined) refs[reference.name] = entry
    else if (Array.isArray(current)) {
      if (!current.some((c) => sameReference(c, entry))) current.push(entry)
    } else if (!sameReference(current, entry)) refs[reference.name] = [current, entry]
    const childFields = rebuildFields(child.id, rows, references, types, new Set([...path, id]))
    if (childFields.title !== undefined && childFields.title !== null) {
      const { definitions: nested, ...rest } = childFields
      definitions = { ...definitions, [String(childFields.title)]: rest, ...(isObject(nested) ? nested : {}) }
    }
  }
  const fields: Record<string, unknown> = { ...row.fields, block_schema_references: refs }
  const stored = isObject(row.fields.definitions) ? row.fields.definitions : {}
  if (Object.keys(definitions).length > 0 || isObject(row.fields.definitions)) {
    fields.definitions = { ...stored, ...definitions }
  }
  return fields
}

export class BlockSchemasRepo extends Effect.Service<BlockSchemasRepo>()("baton/BlockSchemasRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const blockTypes = yield* BlockTypesRepo

    const referencesBelow = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: ReferenceRow,
      execute: (ids) => edgesBelow(sql, SCHEMA_REFERENCES, ids)
    })

    const schemaRows = findRowsByIds(sql, "block_schema", SchemaRow)

    /** The schemas with these ids, each with its nested schemas put back, in the order of `ids`. */
    const readMany = traced("BlockSchemasRepo.readMany")(function* (ids: ReadonlyArray<string>) {
      if (ids.length === 0) return []
      const referenceRows = yield* referencesBelow(ids)
      const all = [...new Set([...ids, ...referenceRows.map((r) => r.reference_block_schema_id)])]
      const found = yield* schemaRows(all)
      const rows = new Map(found.map((r) => [r.id, r]))
      const typeRows = yield* blockTypes.readMany([...new Set(found.map((r) => r.block_type_id))])
      const types = new Map(typeRows.map((t) => [t.id, t]))
      const references = new Map<string, Array<ReferenceRow>>()
      for (const r of referenceRows) {
        const list = references.get(r.parent_block_schema_id) ?? []
        list.push(r)
        references.set(r.parent_block_schema_id, list)
      }
      const out: Array<BlockSchema> = []
      for (const id of ids) {
        const row = rows.get(id)
        if (row === undefined) continue
        out.push({
          id: row.id,
          created: row.created,
          updated: row.updated,
          checksum: row.checksum,
          fields: rebuildFields(id, rows, references, types),
          block_type_id: row.block_type_id,
          block_type: types.get(row.block_type_id) ?? null,
          capabilities: row.capabilities,
          version: row.version
        })
      }
      return out
    })

    const find = (id: string) => Effect.map(readMany([id]), (schemas) => Option.fromNullable(schemas[0]))

    const newestWithChecksum = SqlSchema.findOne({
      Request: AsGiven<{ readonly checksum: string; readonly version: string | null | undefined }>(),
      Result: IdRow,
      execute: ({ checksum, version }) =>
        sql`
          SELECT id FROM block_schema
          WHERE checksum = ${checksum} AND ${version == null ? sql`TRUE` : sql`version = ${version}`}
          ORDER BY created DESC, id DESC LIMIT 1
        `
    })

    /** The id of the newest schema with this checksum (and version, when given). */
    const findIdByChecksum = (checksum: string, version?: string | null) =>
      Effect.map(newestWithChecksum({ checksum, version }), Option.map((row) => row.id))

    const findByChecksum = (checksum: string, version?: string | null) =>
      Effect.flatMap(
        findIdByChecksum(checksum, version),
        Option.match({ onNone: () => Effect.succeedNone, onSome: find })
      )

    /**
     * Inserts a schema row as it is to be stored; its id, or the id of the schema with its checksum
     * and version that a concurrent create stored first (`created` false). BlockSchemaConflict when
     * its type was deleted meanwhile.
     */
    const insert = traced("BlockSchemasRepo.insert")(function* (row: {
      readonly checksum: string
      readonly fields: Record<string, unknown>
      readonly capabilities: ReadonlyArray<string>
      readonly version: string
      readonly block_type_id: string
    }) {
      const at = yield* now
      const id = yield* newId
      // ON CONFLICT waits for the concurrent create to commit, so the schema it stored can be read.
      const inserted = yield* sql`
        INSERT INTO block_schema (id, created, updated, checksum, fields, capabilities, version, block_type_id)
        VALUES (${id}, ${at}, ${at}, ${row.checksum}, ${JSON.stringify(row.fields)}::jsonb,
                ${JSON.stringify(row.capabilities)}::jsonb, ${row.version}, ${row.block_type_id})
        ON CONFLICT (checksum, version) DO NOTHING
        RETURNING id
      `.pipe(Effect.catchIf(isForeignKeyViolation, () => new BlockSchemaConflict()))
      if (inserted.length > 0) return { id, created: true }
      const existing = yield* findIdByChecksum(row.checksum, row.version)
      // The schema that won was deleted before this read: this transaction cannot store it again.
      if (Option.isNone(existing)) return yield* new BlockSchemaConflict()
      return { id: existing.value, created: false }
    })

    /**
     * Inserts many schema rows in one statement, each unless one with its checksum and version is
     * stored. BlockSchemaConflict when a type was deleted meanwhile.
     */
    const insertMany = traced("BlockSchemasRepo.insertMany")(function* (rows: ReadonlyArray<{
      readonly checksum: string
      readonly fields: Record<string, unknown>
      readonly capabilities: ReadonlyArray<string>
      readonly version: string
      readonly block_type_id: string
    }>) {
      if (rows.length === 0) return
      const at = yield* now
      const values = []
      for (const row of rows) {
        values.push(sql`(${yield* newId}, ${at}, ${at}, ${row.checksum}, ${JSON.stringify(row.fields)}::jsonb,
          ${JSON.stringify(row.capabilities)}::jsonb, ${row.version}, ${row.block_type_id})`)
      }
      yield* sql`
        INSERT INTO block_schema (id, created, updated, checksum, fields, capabilities, version, block_type_id)
        VALUES ${sql.csv(values)}
        ON CONFLICT (checksum, version) DO NOTHING
      `.pipe(Effect.catchIf(isForeignKeyViolation, () => new BlockSchemaConflict()))
    })

    /**
     * Records that `parent`'s property `name` holds a block of schema `child`, once;
     * BlockSchemaConflict when `child` was deleted meanwhile.
     */
    const addReference = traced("BlockSchemasRepo.addReference")(function* (parent: string, child: string, name: string) {
      const at = yield* now
      yield* sql`
        INSERT INTO block_schema_reference (id, created, updated, name, parent_block_schema_id, reference_block_schema_id)
        SELECT ${yield* newId}, ${at}, ${at}, ${name}, ${parent}, ${child}
        WHERE NOT EXISTS (
          SELECT 1 FROM block_schema_reference
          WHERE parent_block_schema_id = ${parent} AND reference_block_schema_id = ${child} AND name = ${name}
        )
      `.pipe(Effect.catchIf(isForeignKeyViolation, () => new BlockSchemaConflict()))
    })

    const filteredIds = SqlSchema.findAll({
      Request: AsGiven<{ readonly filter: BlockSchemaFilter | null | undefined } & Page>(),
      Result: IdRow,
      execute: (options) =>
        sql`
          SELECT id FROM block_schema WHERE ${BlockSchemaFilter.compile(sql, options.filter)}
          ORDER BY created DESC, id DESC LIMIT ${options.limit} OFFSET ${options.offset}
        `
    })

    /** Schemas matching the filter, newest first. */
    const filter = traced("BlockSchemasRepo.filter")(function* (options: { readonly filter: BlockSchemaFilter | null | undefined } & Page) {
      const ids = yield* filteredIds(options)
      return yield* readMany(ids.map((r) => r.id))
    })

    /** The capabilities and type of the schema `id`, without rebuilding its fields. */
    const findSummary = SqlSchema.findOne({
      Request: Schema.String,
      Result: SchemaSummaryRow,
      execute: (id) =>
        sql`SELECT block_type_id, capabilities, fields -> 'secret_fields' AS secret_fields FROM block_schema WHERE id = ${id}`
    })

    const remove = (id: string) => Effect.map(sql`DELETE FROM block_schema WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    const capabilityRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ capability: Schema.String }),
      execute: () =>
        sql`SELECT DISTINCT jsonb_array_elements_text(capabilities) AS capability FROM block_schema ORDER BY capability`
    })

    /** Every capability some schema has, sorted. */
    const capabilities = () => Effect.map(capabilityRows(), (rows) => rows.map((r) => r.capability))

    /** Runs `effect` in one transaction (whose own statement failures are defects already). */
    const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>) => inTransaction(sql, effect)

    return {
      ...sqlErrorsAsDefects({
        find,
        readMany,
        findByChecksum,
        findIdByChecksum,
        findSummary,
        insert,
        insertMany,
        addReference,
        filter,
        remove,
        capabilities
      }),
      // Outside the wrapper, whose mapped type would lose its type parameters.
      transaction
    } as const
  }),
  dependencies: [BlockTypesRepo.Default]
}) {}
