/**
 * Block documents: data sealed at rest, secrets obfuscated on the way out unless asked for, and
 * references — a top-level key whose value is `{"$ref": {"block_document_id": …}}` — stored as edges
 * to other documents, whose data (and references) reads put back in place.
 */
import { Effect, Option } from "effect"
import { v4 } from "uuid"
import { isObject } from "../domain/schemas.ts"
import { orFail, ValidationError } from "../domain/errors.ts"
import { type DocumentRow, BlockDocumentsRepo, type ReferenceRow } from "./documents-repo.ts"
import type {
  BlockDocument,
  BlockDocumentCreate,
  BlockDocumentQuery,
  BlockDocumentSort,
  BlockDocumentUpdate
} from "./documents-schemas.ts"
import { Encryption } from "./encryption.ts"
import {
  BlockDocumentConflict,
  BlockDocumentNotFound,
  BlockDocumentReferenced,
  BlockReferenceCycle,
  BlockReferenceInvalid,
  BlockSchemaMigrationInvalid
} from "./errors.ts"
import type { BlockSchema, BlockType } from "./schemas.ts"
import { BlockSchemasRepo } from "./schemas-repo.ts"
import { obfuscateSecrets, restoreSecrets, secretPaths } from "./secrets.ts"
import { StorageDefaults } from "./storage-defaults.ts"
import { BlockTypesRepo } from "./types-repo.ts"
import { traced } from "../domain/traced.ts"

type Data = Record<string, unknown>

/** The data without its references, and the references (key, referenced document id). */
const separateReferences = (data: Data) => {
  const plain: Data = {}
  const references: Array<{ name: string; id: string }> = []
  for (const [key, value] of Object.entries(data)) {
    if (isObject(value) && "$ref" in value) {
      const ref = value.$ref
      const id = isObject(ref) ? ref.block_document_id : undefined
      if (id === undefined || id === null) {
        return Effect.fail(new BlockReferenceInvalid({ detail: `Received block reference without a block_document_id in key ${key}` }))
      }
      if (typeof id !== "string" || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) {
        return Effect.fail(
          new BlockReferenceInvalid({ detail: `Received block reference with an invalid block_document_id in key ${key}` })
        )
      }
      references.push({ name: key, id: id.toLowerCase() })
    } else plain[key] = value
  }
  return Effect.succeed({ plain, references })
}

export class BlockDocuments extends Effect.Service<BlockDocuments>()("baton/BlockDocuments", {
  effect: Effect.gen(function* () {
    const documents = yield* BlockDocumentsRepo
    const schemas = yield* BlockSchemasRepo
    const types = yield* BlockTypesRepo
    const encryption = yield* Encryption
    const storage = yield* StorageDefaults

    /** The documents `ids` names, whole: nested documents in place, their schema and type. */
    const readMany = traced("BlockDocuments.readMany")(function* (ids: ReadonlyArray<string>, includeSecrets: boolean) {
      const { rows, references } = yield* documents.readGraph(ids)
      const byId = new Map(rows.map((r) => [r.id, r]))
      const schemaList = yield* schemas.readMany([...new Set(rows.map((r) => r.block_schema_id))])
      const schemaById = new Map<string, BlockSchema>(schemaList.map((s) => [s.id, s]))
      const typeList = yield* types.readMany([...new Set(rows.map((r) => r.block_type_id))])
      const typeById = new Map<string, BlockType>(typeList.map((t) => [t.id, t]))
      const edges = new Map<string, Array<ReferenceRow>>()
      for (const edge of references) {
        const list = edges.get(edge.parent_block_document_id) ?? []
        list.push(edge)
        edges.set(edge.parent_block_document_id, list)
      }
      const ownData = new Map<string, Data>()
      for (const row of rows) {
        const data = (yield* encryption.decrypt(row.data)) as Data
        const schema = schemaById.get(row.block_schema_id)
        ownData.set(row.id, includeSecrets || schema === undefined ? data : obfuscateSecrets(data, secretPaths(schema.fields)))
      }

      const build = (row: DocumentRow, path: ReadonlySet<string>): { data: Data; references: Data } => {
        const data: Data = { ...ownData.get(row.id) }
        const refs: Data = {}
        for (const edge of edges.get(row.id) ?? []) {
          const child = byId.get(edge.reference_block_document_id)
          if (child === undefined || path.has(child.id)) continue
          const nested = build(child, new Set([...path, row.id]))
          data[edge.name] = nested.data
          refs[edge.name] = {
            block_document: {
              id: child.id,
              name: child.name,
              block_type: typeById.get(child.block_type_id) ?? null,
              is_anonymous: child.is_anonymous,
              block_document_references: nested.references
            }
          }
        }
        return { data, references: refs }
      }

      const out: Array<BlockDocument> = []
      for (const id of ids) {
        const row = byId.get(id)
        if (row === undefined) continue
        const whole = build(row, new Set())
        out.push({
          id: row.id,
          created: row.created,
          updated: row.updated,
          name: row.name,
          data: whole.data,
          block_schema_id: row.block_schema_id,
          block_schema: schemaById.get(row.block_schema_id) ?? null,
          block_type_id: row.block_type_id,
          block_type_name: row.block_type_name,
          block_type: typeById.get(row.block_type_id) ?? null,
          block_document_references: whole.references as BlockDocument["block_document_references"],
          is_anonymous: row.is_anonymous
        })
      }
      return out
    })

    const find = (id: string, includeSecrets: boolean) =>
      Effect.map(readMany([id], includeSecrets), (docs) => Option.fromNullable(docs[0]))

    /** The document named `name` of the type with this slug. */
    const findByName = (slug: string, name: string, includeSecrets: boolean) =>
      Effect.flatMap(
        documents.findIdByName(slug, name),
        Option.match({ onNone: () => Effect.succeedNone, onSome: (id) => find(id, includeSecrets) })
      )

    const filter = traced("BlockDocuments.filter")(function* (
      query: BlockDocumentQuery & {
        readonly include_secrets: boolean
        readonly sort: BlockDocumentSort | null
        readonly offset: number
        /** null: every matching document. */
        readonly limit: number | null
      }
    ) {
      const ids = yield* documents.filterIds({ ...query, sort: query.sort ?? "NAME_ASC" })
      return yield* readMany(ids, query.include_secrets)
    })

    const count = (query: BlockDocumentQuery) => documents.count(query)

    /** Every referenced document must exist: a reference to nothing is an integrity conflict. */
    const checkReferences = (references: ReadonlyArray<{ readonly id: string }>) =>
      Effect.flatMap(documents.existingIds(references.map((r) => r.id)), (existing) =>
        references.every((r) => existing.has(r.id)) ? Effect.void : Effect.fail(new BlockDocumentConflict())
      )

    const create = traced("BlockDocuments.create")(function* (body: BlockDocumentCreate) {
      const id = yield* documents.transaction(
        Effect.gen(function* () {
          const type = yield* types.find(body.block_type_id).pipe(orFail(() => new BlockDocumentConflict()))
          const schema = yield* schemas.findSummary(body.block_schema_id).pipe(orFail(() => new BlockDocumentConflict()))
          if (schema.block_type_id !== type.id) {
            return yield* new ValidationError({ detail: "The block schema is not a schema of the block type." })
          }
          const { plain, references } = yield* separateReferences(body.data)
          yield* checkReferences(references)
          const name = body.is_anonymous && !body.name ? `anonymous-${v4()}` : body.name!
          const created = yield* documents.insert({
            name,
            data: yield* encryption.encrypt(plain),
            is_anonymous: body.is_anonymous,
            block_type_name: type.name,
            block_type_id: type.id,
            block_schema_id: body.block_schema_id
          })
          yield* documents.addReferences(created, references)
          return created
        })
      )
      // Deleted between its transaction and this read.
      return yield* find(id, false).pipe(orFail(() => new BlockDocumentNotFound()))
    })

    const update = traced("BlockDocuments.update")(function* (id: string, body: BlockDocumentUpdate) {
      yield* documents.transaction(
        Effect.gen(function* () {
          const row = yield* documents.lockRow(id).pipe(orFail(() => new BlockDocumentNotFound()))
          // Without merging, what was not sent is gone: no data means empty data.
          const sent = body.data ?? (body.merge_existing_data ? undefined : {})
          if (sent === undefined) return yield* documents.update(id, {})
          const current = (yield* encryption.decrypt(row.data)) as Data
          const schema = Option.getOrUndefined(yield* schemas.findSummary(row.block_schema_id))
          const kept = restoreSecrets(sent, current, secretPaths({ secret_fields: schema?.secret_fields }))
          const merged = body.merge_existing_data ? { ...current, ...kept } : kept
          const separated = yield* separateReferences(merged)
          const { plain } = separated
          const existing = yield* documents.referencesOf(id)
          // Merging keeps the references of keys the update does not mention, as it keeps their data.
          const references = body.merge_existing_data
            ? [
              ...separated.references,
              ...existing.filter((e) => !(e.name in sent)).map((e) => ({ name: e.name, id: e.reference_block_document_id }))
            ]
            : separated.references
          yield* checkReferences(references)
          const reached = yield* documents.reachable(references.map((r) => r.id))
          if (reached.has(id)) return yield* new BlockReferenceCycle()
          const changes: Record<string, unknown> = { data: yield* encryption.encrypt(plain) }
          if (body.block_schema_id !== null && body.block_schema_id !== row.block_schema_id) {
            const proposed = yield* schemas.findSummary(body.block_schema_id).pipe(orFail(() => new BlockDocumentConflict()))
            if (proposed.block_type_id !== row.block_type_id) return yield* new BlockSchemaMigrationInvalid()
            changes.block_schema_id = body.block_schema_id
          }
          yield* documents.update(id, changes)
          const same = (e: ReferenceRow, r: { name: string; id: string }) => e.name === r.name && e.reference_block_document_id === r.id
          yield* documents.addReferences(id, references.filter((r) => !existing.some((e) => same(e, r))))
          yield* documents.removeReferences(existing.filter((e) => !references.some((r) => same(e, r))).map((e) => e.id))
        })
      )
    })

    /** Deletes the document; one that other documents reference is kept (409), so none loses a nested block. */
    const remove = traced("BlockDocuments.remove")(function* (id: string) {
      yield* documents.transaction(
        Effect.gen(function* () {
          yield* documents.lockRow(id).pipe(orFail(() => new BlockDocumentNotFound()))
          const parents = yield* documents.referencedBy(id)
          if (parents.length > 0) {
            return yield* new BlockDocumentReferenced({
              detail: `Block document is referenced by other block documents (${parents.map((p) => p.name).join(", ")}); delete or update them first.`
            })
          }
          yield* storage.clearWhenDeleting({ block_document_id: id }, documents.remove(id))
        })
      )
    })

    return { find, findByName, readMany, filter, count, create, update, remove } as const
  }),
  dependencies: [
    BlockDocumentsRepo.Default,
    BlockSchemasRepo.Default,
    BlockTypesRepo.Default,
    Encryption.Default,
    StorageDefaults.Default
  ]
}) {}
