import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { paginate, resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { NotFound } from "../domain/errors.ts"
import { FlowsRepo } from "./repo.ts"
import { Flow } from "./schemas.ts"
import { createdOrFound } from "../http/responses.ts"

const flowNotFound = new NotFound({ detail: "Flow not found" })

const found = <A>(value: A | undefined) => (value === undefined ? Effect.fail(flowNotFound) : Effect.succeed(value))


export const FlowsLive = HttpApiBuilder.group(BatonApi, "flows", (handlers) =>
  Effect.gen(function* () {
    const flows = yield* FlowsRepo
    return handlers
      .handle("create", ({ payload }) =>
        Effect.flatMap(Effect.orDie(flows.create(payload)), ({ flow, created }) => createdOrFound(Flow, flow, created))
      )
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(Effect.orDie(flows.update(path.id, payload)), (updated) => (updated ? Effect.void : flowNotFound))
      )
      .handle("count", ({ payload }) => Effect.orDie(flows.count(payload)))
      .handle("readByName", ({ path }) => Effect.flatMap(Effect.orDie(flows.readByName(path.name)), found))
      .handle("read", ({ path }) => Effect.flatMap(Effect.orDie(flows.read(path.id)), found))
      .handle("filter", ({ payload }) =>
        Effect.gen(function* () {
          const limit = yield* resolveLimit(payload.limit)
          return yield* Effect.orDie(flows.filter({ query: payload, sort: payload.sort, offset: payload.offset, limit }))
        })
      )
      .handle("delete", ({ path }) =>
        Effect.flatMap(Effect.orDie(flows.remove(path.id)), (deleted) => (deleted ? Effect.void : flowNotFound))
      )
      .handle("bulkDelete", ({ payload }) =>
        Effect.map(Effect.orDie(flows.removeMatching(payload.flows, payload.limit)), (deleted) => ({ deleted }))
      )
      .handle("paginate", ({ payload }) =>
        paginate(payload, (limit, offset) => flows.filter({ query: payload, sort: payload.sort, offset, limit }), flows.count(payload))
      )
  })
)
