import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { NotFound } from "../domain/errors.ts"
import { ArtifactsRepo } from "./repo.ts"

const notFound = new NotFound({ detail: "Artifact not found." })

const found = <A>(value: A | undefined) => (value === undefined ? Effect.fail(notFound) : Effect.succeed(value))

export const ArtifactsLive = HttpApiBuilder.group(BatonApi, "artifacts", (handlers) =>
  Effect.gen(function* () {
    const artifacts = yield* ArtifactsRepo
    return handlers
      .handle("create", ({ payload }) => Effect.orDie(artifacts.create(payload)))
      .handle("read", ({ path }) => Effect.flatMap(Effect.orDie(artifacts.read(path.id)), found))
      // The latest artifact of a key, as its collection records it.
      .handle("readLatest", ({ path }) => Effect.flatMap(Effect.orDie(artifacts.readLatest(path.key)), found))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) => Effect.orDie(artifacts.filter({ ...payload, limit })))
      )
      .handle("count", ({ payload }) => Effect.orDie(artifacts.count(payload)))
      .handle("filterLatest", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) => Effect.orDie(artifacts.filterLatest({ ...payload, limit })))
      )
      .handle("countLatest", ({ payload }) => Effect.orDie(artifacts.countLatest(payload)))
      .handle("update", ({ path, payload }) =>
        Effect.gen(function* () {
          const changes: Record<string, unknown> = {}
          if (payload.data !== undefined) changes.data = payload.data === null ? null : JSON.stringify(payload.data)
          if (payload.description !== undefined) changes.description = payload.description
          if (payload.metadata_ !== undefined) changes.metadata_ = payload.metadata_ === null ? null : JSON.stringify(payload.metadata_)
          if (!(yield* Effect.orDie(artifacts.update(path.id, changes)))) return yield* notFound
        })
      )
      .handle("delete", ({ path }) =>
        Effect.flatMap(Effect.orDie(artifacts.remove(path.id)), (deleted) => (deleted ? Effect.void : Effect.fail(notFound)))
      )
  })
)
