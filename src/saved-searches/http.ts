import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { NotFound } from "../domain/errors.ts"
import { SavedSearchesRepo } from "./repo.ts"
import { SavedSearch } from "./schemas.ts"
import { createdOrFound } from "../http/responses.ts"

const notFound = new NotFound({ detail: "Saved search not found" })

export const SavedSearchesLive = HttpApiBuilder.group(BatonApi, "savedSearches", (handlers) =>
  Effect.gen(function* () {
    const searches = yield* SavedSearchesRepo
    return handlers
      .handle("upsert", ({ payload }) =>
        Effect.gen(function* () {
          const { search, created } = yield* Effect.orDie(searches.upsert(payload))
          return yield* createdOrFound(SavedSearch, search, created)
        })
      )
      .handle("read", ({ path }) =>
        Effect.flatMap(Effect.orDie(searches.read(path.id)), (found) => (found === undefined ? Effect.fail(notFound) : Effect.succeed(found)))
      )
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) => Effect.orDie(searches.filter({ offset: payload.offset, limit })))
      )
      .handle("delete", ({ path }) =>
        Effect.flatMap(Effect.orDie(searches.remove(path.id)), (deleted) => (deleted ? Effect.void : Effect.fail(notFound)))
      )
  })
)
