/**
 * The server's default result storage: a block document (of a schema that can write paths) kept in
 * the configuration table, and forgotten when that document, its schema or its type is deleted.
 */
import { Effect, Option, Schema } from "effect"
import { ConfigurationRepo } from "../configuration/repo.ts"
import { Id } from "../domain/ids.ts"
import { orFail, ValidationError } from "../domain/errors.ts"
import { BlockDocumentsRepo } from "./documents-repo.ts"
import { StorageBlockDocumentNotFound } from "./errors.ts"
import { BlockSchemasRepo } from "./schemas-repo.ts"
import { traced } from "../domain/traced.ts"

const KEY = "server-default-result-storage"

export const ServerDefaultResultStorage = Schema.Struct({
  default_result_storage_block_id: Schema.NullOr(Id)
}).annotations({ identifier: "ServerDefaultResultStorage" })
export type ServerDefaultResultStorage = typeof ServerDefaultResultStorage.Type

/** Other keys are ignored, as the reference ignores them. */
export const ServerDefaultResultStorageUpdate = Schema.Struct({ default_result_storage_block_id: Id }).annotations({
  identifier: "ServerDefaultResultStorageUpdate"
})

/** What a deletion removes: a document, or every document of a schema or of a type. */
export type DeletionScope =
  | { readonly block_document_id: string }
  | { readonly block_schema_id: string }
  | { readonly block_type_id: string }

export class StorageDefaults extends Effect.Service<StorageDefaults>()("baton/StorageDefaults", {
  effect: Effect.gen(function* () {
    const configuration = yield* ConfigurationRepo
    const documents = yield* BlockDocumentsRepo
    const schemas = yield* BlockSchemasRepo

    const read = Effect.map(configuration.find(KEY), (stored): ServerDefaultResultStorage => {
      const value = Option.getOrNull(stored)
      const id = typeof value === "object" && value !== null ? (value as Record<string, unknown>).default_result_storage_block_id : null
      return { default_result_storage_block_id: typeof id === "string" ? id : null }
    })

    /** Makes document `id` the default result storage: it must exist and be able to write paths. */
    const set = traced("StorageDefaults.set")(function* (id: string) {
      const document = yield* documents.findRow(id).pipe(
        orFail(() => new StorageBlockDocumentNotFound({ detail: `Block document ${id} not found.` }))
      )
      const schema = Option.getOrUndefined(yield* schemas.findSummary(document.block_schema_id))
      if (schema === undefined || !schema.capabilities.includes("write-path")) {
        return yield* new ValidationError({ detail: `Block document ${id} cannot be used for result storage.` })
      }
      yield* configuration.write(KEY, { default_result_storage_block_id: id })
      return yield* read
    })

    const clear = configuration.remove(KEY)

    /** Runs `deletion`; when it deleted the default storage document (or its schema or type), forgets it. */
    const clearWhenDeleting = <E, R>(scope: DeletionScope, deletion: Effect.Effect<boolean, E, R>) =>
      Effect.gen(function* () {
        const current = (yield* read).default_result_storage_block_id
        const document = current === null ? undefined : Option.getOrUndefined(yield* documents.findRow(current))
        const affected =
          document !== undefined &&
          ("block_document_id" in scope
            ? document.id === scope.block_document_id
            : "block_schema_id" in scope
            ? document.block_schema_id === scope.block_schema_id
            : document.block_type_id === scope.block_type_id)
        const deleted = yield* deletion
        if (deleted && affected) yield* clear
        return deleted
      })

    return { read, set, clear, clearWhenDeleting } as const
  }),
  dependencies: [BlockDocumentsRepo.Default, BlockSchemasRepo.Default, ConfigurationRepo.Default]
}) {}
