import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { orFail } from "../domain/errors.ts"
import { ArtifactNotFound } from "./errors.ts"
import { ArtifactsRepo } from "./repo.ts"

const orNotFound = orFail(() => new ArtifactNotFound())

export const ArtifactsLive = apiGroup(BatonApi, "artifacts", (handlers) =>
  Effect.gen(function* () {
    const artifacts = yield* ArtifactsRepo
    return handlers
      .handle("create", ({ payload }) => artifacts.create(payload))
      .handle("read", ({ path }) => orNotFound(artifacts.find(path.id)))
      // The latest artifact of a key, as its collection records it.
      .handle("readLatest", ({ path }) => orNotFound(artifacts.findLatest(path.key)))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) => artifacts.filter({ ...payload, limit }))
      )
      .handle("count", ({ payload }) => artifacts.count(payload))
      .handle("filterLatest", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) => artifacts.filterLatest({ ...payload, limit }))
      )
      .handle("countLatest", ({ payload }) => artifacts.countLatest(payload))
      .handle("update", ({ path, payload }) =>
        Effect.gen(function* () {
          const changes: Record<string, unknown> = {}
          if (payload.data !== undefined) changes.data = payload.data === null ? null : JSON.stringify(payload.data)
          if (payload.description !== undefined) changes.description = payload.description
          if (payload.metadata_ !== undefined) changes.metadata_ = payload.metadata_ === null ? null : JSON.stringify(payload.metadata_)
          if (!(yield* artifacts.update(path.id, changes))) return yield* new ArtifactNotFound()
        })
      )
      .handle("delete", ({ path }) =>
        Effect.flatMap(artifacts.remove(path.id), (deleted) => (deleted ? Effect.void : new ArtifactNotFound()))
      )
  })
).pipe(Layer.provide(ArtifactsRepo.Default))
