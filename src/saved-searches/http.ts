import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { orFail } from "../domain/errors.ts"
import { SavedSearchNotFound } from "./errors.ts"
import { SavedSearchesRepo } from "./repo.ts"
import { SavedSearch } from "./schemas.ts"
import { createdOrFound } from "../http/responses.ts"

export const SavedSearchesLive = apiGroup(BatonApi, "savedSearches", (handlers) =>
  Effect.gen(function* () {
    const searches = yield* SavedSearchesRepo
    return handlers
      .handle("upsert", ({ payload }) =>
        Effect.flatMap(searches.upsert(payload), ({ search, created }) => createdOrFound(SavedSearch, search, created))
      )
      .handle("read", ({ path }) => searches.find(path.id).pipe(orFail(() => new SavedSearchNotFound())))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) => searches.filter({ offset: payload.offset, limit }))
      )
      .handle("delete", ({ path }) =>
        Effect.flatMap(searches.remove(path.id), (deleted) => (deleted ? Effect.void : new SavedSearchNotFound()))
      )
  })
).pipe(Layer.provide(SavedSearchesRepo.Default))
