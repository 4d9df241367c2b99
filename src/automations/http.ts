import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { validateTemplate } from "../domain/templates.ts"
import { BatonApi } from "../api.ts"
import { TemplateInvalid } from "../templates/api.ts"
import { AutomationsRepo } from "./repo.ts"
import { automationNotFound, Automations } from "./service.ts"

export const AutomationsLive = HttpApiBuilder.group(BatonApi, "automations", (handlers) =>
  Effect.gen(function* () {
    const repo = yield* AutomationsRepo
    const automations = yield* Automations
    return handlers
      .handle("create", ({ payload }) => automations.create(payload))
      .handle("read", ({ path }) =>
        Effect.flatMap(Effect.orDie(repo.read(path.id)), (found) => (found === undefined ? Effect.fail(automationNotFound) : Effect.succeed(found)))
      )
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          Effect.orDie(repo.filter({ filter: payload.automations, sort: payload.sort, offset: payload.offset, limit }))
        )
      )
      .handle("count", () => Effect.orDie(repo.count))
      .handle("replace", ({ path, payload }) => automations.replace(path.id, payload))
      .handle("update", ({ path, payload }) => automations.setEnabled(path.id, payload.enabled))
      .handle("delete", ({ path }) => automations.remove(path.id))
      .handle("relatedTo", ({ path }) => Effect.orDie(repo.relatedTo(path.resource_id)))
      .handle("deleteOwnedBy", ({ path }) => Effect.as(automations.removeOwnedBy(path.resource_id), null))
      .handle("validateTemplate", ({ payload }) => {
        const problem = validateTemplate(payload)
        return problem === undefined ? Effect.void : Effect.fail(new TemplateInvalid({ error: { ...problem, source: payload } }))
      })
  })
)
