import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { paginate, resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { orFail } from "../domain/errors.ts"
import { FlowNotFound } from "./errors.ts"
import { FlowsRepo } from "./repo.ts"
import { Flow } from "./schemas.ts"
import { createdOrFound } from "../http/responses.ts"

const orNotFound = orFail(() => new FlowNotFound())

export const FlowsLive = apiGroup(BatonApi, "flows", (handlers) =>
  Effect.gen(function* () {
    const flows = yield* FlowsRepo
    return handlers
      .handle("create", ({ payload }) =>
        Effect.flatMap(flows.create(payload), ({ flow, created }) => createdOrFound(Flow, flow, created))
      )
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(flows.update(path.id, payload), (updated) => (updated ? Effect.void : new FlowNotFound()))
      )
      .handle("count", ({ payload }) => flows.count(payload))
      .handle("readByName", ({ path }) => orNotFound(flows.findByName(path.name)))
      .handle("read", ({ path }) => orNotFound(flows.find(path.id)))
      .handle("filter", ({ payload }) =>
        Effect.gen(function* () {
          const limit = yield* resolveLimit(payload.limit)
          return yield* flows.filter({ query: payload, sort: payload.sort, offset: payload.offset, limit })
        })
      )
      .handle("delete", ({ path }) =>
        Effect.flatMap(flows.remove(path.id), (deleted) => (deleted ? Effect.void : new FlowNotFound()))
      )
      .handle("bulkDelete", ({ payload }) =>
        Effect.map(flows.removeMatching(payload.flows, payload.limit), (deleted) => ({ deleted }))
      )
      .handle("paginate", ({ payload }) =>
        paginate(payload, (limit, offset) => flows.filter({ query: payload, sort: payload.sort, offset, limit }), flows.count(payload))
      )
  })
).pipe(Layer.provide(FlowsRepo.Default))
