import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { integrityConflict, orFail } from "../domain/errors.ts"
import { VariableNotFound } from "./errors.ts"
import { VariablesRepo } from "./repo.ts"
import type { Variable, VariableUpdate } from "./schemas.ts"

const orNotFound = orFail(() => new VariableNotFound())

export const VariablesLive = apiGroup(BatonApi, "variables", (handlers) =>
  Effect.gen(function* () {
    const variables = yield* VariablesRepo

    /** Changes what was sent; a name taken, or null for a name or tags (which must have one), is a conflict. */
    const update = (existing: Variable, body: VariableUpdate) =>
      Effect.gen(function* () {
        if (body.name === null || body.tags === null) return yield* integrityConflict()
        const changes: Record<string, unknown> = {}
        if (body.name !== undefined) changes.name = body.name
        if (body.value !== undefined) changes.value = JSON.stringify(body.value)
        if (body.tags !== undefined) changes.tags = JSON.stringify(body.tags)
        yield* variables.update(existing.id, changes)
      })

    const remove = (variable: Variable) => Effect.asVoid(variables.remove(variable.id))

    return handlers
      .handle("create", ({ payload }) => variables.create(payload))
      .handle("read", ({ path }) => orNotFound(variables.find(path.id)))
      .handle("readByName", ({ path }) => orNotFound(variables.findByName(path.name)))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          variables.filter({ filter: payload.variables, sort: payload.sort, offset: payload.offset, limit })
        )
      )
      .handle("count", ({ payload }) => variables.count(payload.variables))
      .handle("update", ({ path, payload }) => Effect.flatMap(orNotFound(variables.find(path.id)), (v) => update(v, payload)))
      .handle("updateByName", ({ path, payload }) =>
        Effect.flatMap(orNotFound(variables.findByName(path.name)), (v) => update(v, payload))
      )
      .handle("delete", ({ path }) => Effect.flatMap(orNotFound(variables.find(path.id)), remove))
      .handle("deleteByName", ({ path }) => Effect.flatMap(orNotFound(variables.findByName(path.name)), remove))
  })
).pipe(Layer.provide(VariablesRepo.Default))
