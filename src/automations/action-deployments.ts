/** The deployment actions: run a deployment (its parameters rendered as templates), pause it, resume it. */
import { Effect, Either, Schema } from "effect"
import { DeploymentRuns } from "../deployments/runs.ts"
import { DeploymentFlowRunCreate } from "../deployments/schemas.ts"
import { Deployments } from "../deployments/service.ts"
import { hydrate, referencedVariables } from "../domain/parameters.ts"
import { isObject } from "../domain/schemas.ts"
import { now } from "../domain/time.ts"
import { VariablesRepo } from "../variables/repo.ts"
import { command, type Perform, type Performers, target, targetResource } from "./action-performer.ts"
import type { ActionTemplates } from "./action-templates.ts"
import { actionFailed } from "./outbound.ts"

const decodeRunCreate = Schema.decodeUnknownSync(DeploymentFlowRunCreate)

/** Plain strings with Jinja in them become `jinja` values; a lone expression keeps its type through `tojson`. */
export const upgradeTemplates = (parameters: Record<string, unknown>): Record<string, unknown> => {
  const upgrade = (value: unknown): unknown => {
    if (typeof value === "string" && /\{\{|\{%/.test(value)) {
      const stripped = value.trim()
      if (stripped.startsWith("{{") && stripped.endsWith("}}") && stripped.split("{{").length === 2) {
        return { __prefect_kind: "json", value: { __prefect_kind: "jinja", template: `{{ (${stripped.slice(2, -2).trim()}) | tojson }}` } }
      }
      return { __prefect_kind: "jinja", template: value }
    }
    if (Array.isArray(value)) return value.map(upgrade)
    if (isObject(value)) return "__prefect_kind" in value ? value : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, upgrade(v)]))
    return value
  }
  return upgrade(parameters) as Record<string, unknown>
}

export const makeDeploymentActions = (templates: ActionTemplates) =>
  Effect.gen(function* () {
    const deployments = yield* Deployments
    const deploymentRuns = yield* DeploymentRuns
    const variables = yield* VariablesRepo

    const pauseOrResume: Perform<"pause-deployment" | "resume-deployment"> = (ta, action, related, details) =>
      Effect.gen(function* () {
        const id = yield* target(ta, action, action.deployment_id, "prefect.deployment", "deployment")
        related.push(targetResource("deployment", id))
        yield* command(action.type, action.type === "pause-deployment" ? deployments.pause(id) : deployments.resume(id), details)
      })

    const run: Perform<"run-deployment"> = (ta, action, related, details) =>
      Effect.gen(function* () {
        const automationId = ta.automation.id
        const id = yield* target(ta, action, action.deployment_id, "prefect.deployment", "deployment")
        related.push(targetResource("deployment", id))
        const upgraded = upgradeTemplates(action.parameters ?? {})
        const context = yield* templates.templateContext([JSON.stringify(upgraded)], ta)
        const values = yield* variables.valuesByName(referencedVariables(upgraded))
        const parameters = hydrate(upgraded, {
          variable: (name) => (values.has(name) ? values.get(name) : undefined),
          jinja: context,
          filters: templates.filters
        })
        if (Either.isLeft(parameters)) return yield* actionFailed(`Unable to create flow run from deployment: ${parameters.left}`)
        const scheduled = new Date((yield* now).getTime() + action.schedule_after * 1000)
        const body = decodeRunCreate({
          state: { type: "SCHEDULED", state_details: { scheduled_time: scheduled.toISOString() } },
          parameters: parameters.right,
          idempotency_key: `automation ${automationId}, action ${ta.action_index}, invocation ${ta.id}`,
          ...(action.job_variables !== null ? { job_variables: action.job_variables } : {})
        })
        const { run } = yield* command(
          action.type,
          deploymentRuns.createFlowRun(id, body, { type: "AUTOMATION", id: automationId, display_value: ta.automation.name }),
          details,
          201
        )
        related.push({ "prefect.resource.id": `prefect.flow-run.${run.id}`, "prefect.resource.role": "flow-run", "prefect.resource.name": run.name })
      })

    return {
      "run-deployment": run,
      "pause-deployment": pauseOrResume,
      "resume-deployment": pauseOrResume
    } satisfies Performers<"run-deployment" | "pause-deployment" | "resume-deployment">
  })
