import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { validateTemplate } from "../domain/templates.ts"
import { BatonApi } from "../api.ts"
import { orFail } from "../domain/errors.ts"
import { TemplateInvalid } from "../templates/api.ts"
import { AutomationNotFound } from "./errors.ts"
import { AutomationsRepo } from "./repo.ts"
import { Automations } from "./service.ts"

export const AutomationsLive = apiGroup(BatonApi, "automations", (handlers) =>
  Effect.gen(function* () {
    const repo = yield* AutomationsRepo
    const automations = yield* Automations
    return handlers
      .handle("create", ({ payload }) => automations.create(payload))
      .handle("read", ({ path }) => repo.find(path.id).pipe(orFail(() => new AutomationNotFound())))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          repo.filter({ filter: payload.automations, sort: payload.sort, offset: payload.offset, limit })
        )
      )
      .handle("count", () => repo.count)
      .handle("replace", ({ path, payload }) => automations.replace(path.id, payload))
      .handle("update", ({ path, payload }) => automations.setEnabled(path.id, payload.enabled))
      .handle("delete", ({ path }) => automations.remove(path.id))
      .handle("relatedTo", ({ path }) => repo.relatedTo(path.resource_id))
      .handle("deleteOwnedBy", ({ path }) => Effect.as(automations.removeOwnedBy(path.resource_id), null))
      .handle("validateTemplate", ({ payload }) => {
        const problem = validateTemplate(payload)
        return problem === undefined ? Effect.void : Effect.fail(new TemplateInvalid({ error: { ...problem, source: payload } }))
      })
  })
).pipe(Layer.provide([Automations.Default, AutomationsRepo.Default]))
