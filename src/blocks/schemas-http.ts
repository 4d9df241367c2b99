import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { orFail } from "../domain/errors.ts"
import { createdOrFound } from "../http/responses.ts"
import { BlockSchemaNotFound, BlockSchemaProtected } from "./errors.ts"
import { BlockSchema } from "./schemas.ts"
import { BlockSchemas } from "./schemas-service.ts"
import { BlockSchemasRepo } from "./schemas-repo.ts"
import { StorageDefaults } from "./storage-defaults.ts"

export const BlockSchemasLive = apiGroup(BatonApi, "blockSchemas", (handlers) =>
  Effect.gen(function* () {
    const schemas = yield* BlockSchemasRepo
    const service = yield* BlockSchemas
    const storage = yield* StorageDefaults

    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const { schema, created } = yield* service.create(payload)
          return yield* createdOrFound(BlockSchema, schema, created)
        })
      )
      .handle("read", ({ path }) => schemas.find(path.id).pipe(orFail(() => new BlockSchemaNotFound())))
      // Without a version, the newest schema with the checksum.
      .handle("readByChecksum", ({ path, urlParams }) =>
        schemas.findByChecksum(path.checksum, urlParams.version).pipe(orFail(() => new BlockSchemaNotFound()))
      )
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          schemas.filter({ filter: payload.block_schemas, offset: payload.offset, limit })
        )
      )
      .handle("delete", ({ path }) =>
        Effect.gen(function* () {
          const schema = yield* schemas.find(path.id).pipe(orFail(() => new BlockSchemaNotFound()))
          if (schema.block_type?.is_protected) return yield* new BlockSchemaProtected()
          yield* storage.clearWhenDeleting({ block_schema_id: path.id }, schemas.remove(path.id))
        })
      )
  })
).pipe(Layer.provide([BlockSchemas.Default, BlockSchemasRepo.Default, StorageDefaults.Default]))

export const BlockCapabilitiesLive = apiGroup(BatonApi, "blockCapabilities", (handlers) =>
  Effect.gen(function* () {
    const schemas = yield* BlockSchemasRepo
    return handlers.handle("list", () => schemas.capabilities())
  })
).pipe(Layer.provide(BlockSchemasRepo.Default))
