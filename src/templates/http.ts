import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { validateTemplate } from "../domain/templates.ts"
import { BatonApi } from "../api.ts"
import { TemplateInvalid } from "./api.ts"

export const TemplatesLive = HttpApiBuilder.group(BatonApi, "templates", (handlers) =>
  handlers.handle("validate", ({ payload }) => {
    const problem = validateTemplate(payload)
    return problem === undefined ? Effect.void : Effect.fail(new TemplateInvalid({ error: { ...problem, source: payload } }))
  })
)
