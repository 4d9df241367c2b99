/** Hydrating parameters and run input with the workspace's variables. */
import { Effect } from "effect"
import { hydrate, hydrateKeepingProblems, referencedVariables } from "../domain/parameters.ts"
import type { TemplateBudget } from "../domain/templates.ts"
import { VariablesRepo } from "./repo.ts"

export class Hydration extends Effect.Service<Hydration>()("baton/Hydration", {
  effect: Effect.gen(function* () {
    const variables = yield* VariablesRepo
    /**
     * The value with every `__prefect_kind` replaced (variables read once, those it names only), or
     * the first problem. Its templates spend from `budget` when given (one shared by a request's
     * values), else from their own.
     */
    const hydrateValue = (value: Record<string, unknown>, budget?: TemplateBudget) =>
      Effect.map(variables.valuesByName(referencedVariables(value)), (values) =>
        hydrate(value, { variable: (name) => (values.has(name) ? values.get(name) : undefined), ...(budget ? { budget } : {}) })
      )
    const variable = (values: ReadonlyMap<string, unknown>) => (name: string) => (values.has(name) ? values.get(name) : undefined)
    /**
     * The value with every `__prefect_kind` replaced, its problems and templates left in place as
     * placeholders (to be checked against a schema, not used).
     */
    const hydrateForCheck = (value: Record<string, unknown>) =>
      Effect.map(variables.valuesByName(referencedVariables(value)), (values) =>
        hydrateKeepingProblems(value, { variable: variable(values) })
      )
    return { hydrate: hydrateValue, hydrateForCheck } as const
  }),
  dependencies: [VariablesRepo.Default]
}) {}
