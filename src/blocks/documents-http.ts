import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { orFail } from "../domain/errors.ts"
import { BlockDocuments } from "./documents-service.ts"
import { BlockDocumentNotFound } from "./errors.ts"

export const BlockDocumentsLive = apiGroup(BatonApi, "blockDocuments", (handlers) =>
  Effect.gen(function* () {
    const documents = yield* BlockDocuments
    return handlers
      .handle("create", ({ payload }) => documents.create(payload))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) => documents.filter({ ...payload, limit }))
      )
      .handle("count", ({ payload }) => documents.count(payload))
      .handle("read", ({ path, urlParams }) =>
        documents.find(path.id, urlParams.include_secrets).pipe(orFail(() => new BlockDocumentNotFound()))
      )
      .handle("update", ({ path, payload }) => documents.update(path.id, payload))
      .handle("delete", ({ path }) => documents.remove(path.id))
  })
).pipe(Layer.provide(BlockDocuments.Default))
