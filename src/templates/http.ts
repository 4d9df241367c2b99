import { apiGroup } from "../http/group.ts"
import { Effect } from "effect"
import { validateTemplate } from "../domain/templates.ts"
import { BatonApi } from "../api.ts"
import { TemplateInvalid } from "./api.ts"

export const TemplatesLive = apiGroup(BatonApi, "templates", (handlers) =>
  handlers.handle("validate", ({ payload }) => {
    const problem = validateTemplate(payload)
    return problem === undefined ? Effect.void : Effect.fail(new TemplateInvalid({ error: { ...problem, source: payload } }))
  })
)
