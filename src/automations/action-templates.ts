/**
 * Rendering an action's templates (webhook payloads, notification subject and body, run-deployment
 * parameters) with `automation`, `event`, `labels`, `firing`, `firings`, `events`, and the objects
 * the triggering event names that a template mentions (`flow_run`, `flow`, `deployment`,
 * `work_pool`, `work_queue`, `task_run`), plus `variables`.
 */
import { Effect, Either, Option, Schema } from "effect"
import { DeploymentsRepo } from "../deployments/repo.ts"
import { renderTemplate, templateBudget } from "../domain/templates.ts"
import { FlowRunsRepo } from "../flow-runs/repo.ts"
import { FlowsRepo } from "../flows/repo.ts"
import { Settings } from "../settings/settings.ts"
import { TaskRunsRepo } from "../task-runs/repo.ts"
import { VariablesRepo } from "../variables/repo.ts"
import { WorkQueuesRepo } from "../work-pools/queues-repo.ts"
import { WorkPoolsRepo } from "../work-pools/repo.ts"
import { idOfKind, resourceOfKind } from "./action-performer.ts"
import { allEvents, allFirings, eventJson, type TriggeredAction } from "./firing.ts"
import { actionFailed } from "./outbound.ts"
import { Automation } from "./schemas.ts"
import { templateFilters } from "./template-filters.ts"

const encodeAutomation = Schema.encodeSync(Automation)

/** JSON as templates and payloads see it (dates as ISO strings). */
const plain = (value: unknown) => (value === undefined ? null : JSON.parse(JSON.stringify(value)))

const OBJECT_KINDS = ["flow_run", "flow", "deployment", "work_pool", "work_queue", "task_run"] as const

export const makeActionTemplates = Effect.gen(function* () {
  const deploymentsRepo = yield* DeploymentsRepo
  const flowRuns = yield* FlowRunsRepo
  const flows = yield* FlowsRepo
  const taskRuns = yield* TaskRunsRepo
  const poolsRepo = yield* WorkPoolsRepo
  const queues = yield* WorkQueuesRepo
  const variables = yield* VariablesRepo
  const settings = yield* Settings
  const api = settings.server.api
  const host = api.host === "0.0.0.0" || api.host === "::" ? "127.0.0.1" : api.host
  const filters = templateFilters(`http://${host}:${api.port}${settings.server.ui.serve_base.replace(/\/?$/, "/")}`)

  const readObject = (kind: (typeof OBJECT_KINDS)[number], id: string): Effect.Effect<Option.Option<unknown>> => {
    switch (kind) {
      case "flow_run":
        return flowRuns.find(id)
      case "flow":
        return flows.find(id)
      case "deployment":
        return deploymentsRepo.find(id)
      case "work_pool":
        return poolsRepo.findById(id)
      case "work_queue":
        return queues.find(id)
      case "task_run":
        return taskRuns.find(id)
    }
  }

  /** The context templates render with: the firing, and the objects the templates mention. */
  const templateContext = (templates: ReadonlyArray<string>, ta: TriggeredAction) =>
    Effect.gen(function* () {
      const context: Record<string, unknown> = {
        automation: plain(encodeAutomation(ta.automation)),
        event: ta.triggering_event ? eventJson(ta.triggering_event) : null,
        labels: ta.triggering_labels,
        firing: plain(ta.firing),
        firings: plain(allFirings(ta.firing)),
        events: allEvents(ta.firing).map(eventJson)
      }
      const text = templates.join("\n")
      for (const kind of OBJECT_KINDS) {
        if (!new RegExp(`\\b${kind}\\b`).test(text)) continue
        const id = idOfKind(resourceOfKind(ta.triggering_event, `prefect.${kind.replace("_", "-")}`)?.["prefect.resource.id"], `prefect.${kind.replace("_", "-")}`)
        context[kind] = id === undefined ? null : plain(Option.getOrUndefined(yield* readObject(kind, id)))
      }
      if (/\bvariables\b/.test(text)) {
        const all = yield* variables.filter({ filter: null, sort: "NAME_ASC", offset: 0, limit: 1000 })
        context.variables = Object.fromEntries(all.map((v) => [v.name, v.value]))
      }
      return context
    })

  const render = (templates: ReadonlyArray<string>, ta: TriggeredAction, details: Record<string, unknown>) =>
    Effect.flatMap(templateContext(templates, ta), (context) => {
      const rendered: Array<string> = []
      // The action's templates share one budget (steps, values made, time).
      const budget = templateBudget()
      for (const template of templates) {
        const result = renderTemplate(template, context, filters, budget)
        if (Either.isLeft(result)) {
          details.template_error = result.left
          details.template_source = template
          return Effect.fail(actionFailed(`Template rendering failed: ${result.left}`))
        }
        rendered.push(result.right)
      }
      return Effect.succeed(rendered)
    })

  return { filters, templateContext, render } as const
})

export type ActionTemplates = Effect.Effect.Success<typeof makeActionTemplates>
