import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { Conflict, integrityConflict, NotFound } from "../domain/errors.ts"
import { VariablesRepo } from "./repo.ts"
import type { Variable, VariableUpdate } from "./schemas.ts"
import { isUniqueViolation } from "../database/errors.ts"

const notFound = new NotFound({ detail: "Variable not found." })


export const VariablesLive = HttpApiBuilder.group(BatonApi, "variables", (handlers) =>
  Effect.gen(function* () {
    const variables = yield* VariablesRepo

    const found = (variable: Variable | undefined) => (variable === undefined ? Effect.fail(notFound) : Effect.succeed(variable))

    /** Changes what was sent; a name taken, or null for a name or tags (which must have one), is a conflict. */
    const update = (variable: Variable | undefined, body: VariableUpdate) =>
      Effect.gen(function* () {
        const existing = yield* found(variable)
        if (body.name === null || body.tags === null) return yield* integrityConflict()
        const changes: Record<string, unknown> = {}
        if (body.name !== undefined) changes.name = body.name
        if (body.value !== undefined) changes.value = JSON.stringify(body.value)
        if (body.tags !== undefined) changes.tags = JSON.stringify(body.tags)
        yield* variables.update(existing.id, changes).pipe(
          Effect.catchIf(isUniqueViolation, () => Effect.fail(integrityConflict())),
          Effect.catchTag("SqlError", Effect.die)
        )
      })

    const remove = (variable: Variable | undefined) =>
      Effect.flatMap(found(variable), (v) => Effect.asVoid(Effect.orDie(variables.remove(v.id))))

    return handlers
      .handle("create", ({ payload }) =>
        Effect.flatMap(Effect.orDie(variables.create(payload)), (created) =>
          created === undefined
            ? Effect.fail(new Conflict({ detail: `A variable with the name '${payload.name}' already exists.` }))
            : Effect.succeed(created)
        )
      )
      .handle("read", ({ path }) => Effect.flatMap(Effect.orDie(variables.read(path.id)), found))
      .handle("readByName", ({ path }) => Effect.flatMap(Effect.orDie(variables.readByName(path.name)), found))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          Effect.orDie(variables.filter({ filter: payload.variables, sort: payload.sort, offset: payload.offset, limit }))
        )
      )
      .handle("count", ({ payload }) => Effect.orDie(variables.count(payload.variables)))
      .handle("update", ({ path, payload }) => Effect.flatMap(Effect.orDie(variables.read(path.id)), (v) => update(v, payload)))
      .handle("updateByName", ({ path, payload }) =>
        Effect.flatMap(Effect.orDie(variables.readByName(path.name)), (v) => update(v, payload))
      )
      .handle("delete", ({ path }) => Effect.flatMap(Effect.orDie(variables.read(path.id)), remove))
      .handle("deleteByName", ({ path }) => Effect.flatMap(Effect.orDie(variables.readByName(path.name)), remove))
  })
)
