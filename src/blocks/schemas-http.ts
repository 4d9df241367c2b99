import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { Forbidden, NotFound } from "../domain/errors.ts"
import { createdOrFound } from "../http/responses.ts"
import { BlockSchema } from "./schemas.ts"
import { BlockSchemas } from "./schemas-service.ts"
import { BlockSchemasRepo } from "./schemas-repo.ts"
import { StorageDefaults } from "./storage-defaults.ts"
import { BlockTypesRepo } from "./types-repo.ts"

const notFound = new NotFound({ detail: "Block schema not found" })

const found = (schema: BlockSchema | undefined) => (schema === undefined ? Effect.fail(notFound) : Effect.succeed(schema))

export const BlockSchemasLive = HttpApiBuilder.group(BatonApi, "blockSchemas", (handlers) =>
  Effect.gen(function* () {
    const schemas = yield* BlockSchemasRepo
    const service = yield* BlockSchemas
    const types = yield* BlockTypesRepo
    const storage = yield* StorageDefaults

    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const type = yield* Effect.orDie(types.read(payload.block_type_id))
          if (type === undefined) return yield* new NotFound({ detail: `Block type ${payload.block_type_id} not found.` })
          const { schema, created } = yield* service.create(payload)
          return yield* createdOrFound(BlockSchema, schema, created)
        })
      )
      .handle("read", ({ path }) => Effect.flatMap(Effect.orDie(schemas.read(path.id)), found))
      // Without a version, the newest schema with the checksum.
      .handle("readByChecksum", ({ path, urlParams }) =>
        Effect.flatMap(Effect.orDie(schemas.readByChecksum(path.checksum, urlParams.version)), found)
      )
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          Effect.orDie(schemas.filter({ filter: payload.block_schemas, offset: payload.offset, limit }))
        )
      )
      .handle("delete", ({ path }) =>
        Effect.gen(function* () {
          const schema = yield* Effect.flatMap(Effect.orDie(schemas.read(path.id)), found)
          if (schema.block_type?.is_protected) {
            return yield* new Forbidden({ detail: "Block schemas for protected block types cannot be deleted." })
          }
          yield* storage.clearWhenDeleting({ block_schema_id: path.id }, schemas.remove(path.id))
        })
      )
  })
)

export const BlockCapabilitiesLive = HttpApiBuilder.group(BatonApi, "blockCapabilities", (handlers) =>
  Effect.gen(function* () {
    const schemas = yield* BlockSchemasRepo
    return handlers.handle("list", () => Effect.orDie(schemas.capabilities))
  })
)
