/**
 * The checks automation bodies go through beyond their shapes (the schemas in schemas.ts run them):
 * how deep triggers nest, the templates in run-deployment parameters, and run-deployment actions
 * that would trigger their own automation again.
 */
import { isObject } from "../domain/schemas.ts"
import { valueErrorItem } from "../domain/problems.ts"
import { validateTemplate } from "../domain/templates.ts"
import type { ResourceSpecification } from "../events/filter.ts"
import type { Precheck } from "../http/input-checks.ts"
import type { Action, Trigger } from "./schemas.ts"

/**
 * How deep compound and sequence triggers may be nested. Real automations nest two or three deep;
 * a limit keeps the work a trigger costs (checking it, answering it) small whatever is sent.
 */
export const MAX_TRIGGER_DEPTH = 10

export const tooDeep = `Triggers may be nested at most ${MAX_TRIGGER_DEPTH} deep`

/** Whether a trigger, decoded or as sent, nests `triggers` deeper than the limit (walked without recursion). */
export const nestedTooDeep = (root: unknown): boolean => {
  const stack: Array<readonly [unknown, number]> = [[root, 1]]
  while (stack.length > 0) {
    const [trigger, depth] = stack.pop()!
    const children = (trigger as { triggers?: unknown } | null)?.triggers
    if (!Array.isArray(children)) continue
    if (depth + 1 > MAX_TRIGGER_DEPTH) return true
    for (const child of children) stack.push([child, depth + 1])
  }
  return false
}

/**
 * The same limit on a body as sent, before it is decoded: decoding a trigger costs time growing
 * faster than its depth, so a body nested hundreds deep is refused without it.
 */
export const precheckTriggerDepth: Precheck = (body) =>
  nestedTooDeep((body as { trigger?: unknown } | null)?.trigger)
    ? [valueErrorItem(["body", "trigger"], tooDeep)]
    : []

/** Problems of `__prefect_kind` values a run-deployment action's parameters carry, found without rendering them. */
export const parameterProblems = (value: unknown, prefix = ""): Array<string> => {
  if (Array.isArray(value)) return value.flatMap((item, i) => parameterProblems(item, `${prefix}[${i}]`))
  if (!isObject(value)) {
    if (typeof value === "string" && /\{\{|\{%/.test(value)) {
      const problem = validateTemplate(value)
      return problem === undefined ? [] : [`${prefix ? `${prefix}: ` : ""}Invalid jinja: ${problem.message}`]
    }
    return []
  }
  if ("__prefect_kind" in value) {
    if (value.__prefect_kind === "jinja") {
      if (typeof value.template !== "string") return [`${prefix ? `${prefix}: ` : ""}Missing 'template' key in __prefect object`]
      const problem = validateTemplate(value.template)
      return problem === undefined ? [] : [`${prefix ? `${prefix}: ` : ""}Invalid jinja: ${problem.message}`]
    }
    if (value.__prefect_kind === "json") return "value" in value ? parameterProblems(value.value, prefix) : []
    return []
  }
  return Object.entries(value).flatMap(([key, item]) => parameterProblems(item, prefix ? `${prefix}.${key}` : key))
}

/** Flow run state changes every run of a deployment goes through. */
const RUN_LIFECYCLE_EVENTS = new Set(["prefect.flow-run.Scheduled", "prefect.flow-run.Pending", "prefect.flow-run.Running", "prefect.flow-run.*"])

const matchesEveryFlowRun = (spec: ResourceSpecification) => {
  const labels = Object.entries(spec)
  if (labels.length === 0) return true
  if (labels.length !== 1 || labels[0]![0] !== "prefect.resource.id") return false
  const values = labels[0]![1]
  return (typeof values === "string" ? [values] : values).some((v) => v === "prefect.flow-run.*")
}

/**
 * An enabled reactive automation on flow run lifecycle events that runs a deployment would make
 * runs that trigger it again: refused unless its trigger narrows which runs it covers.
 */
export const runDeploymentLoop = (automation: {
  readonly enabled: boolean
  readonly trigger: Trigger
  readonly actions: ReadonlyArray<Action>
}): string | undefined => {
  const trigger = automation.trigger
  if (!automation.enabled || trigger.type !== "event" || trigger.posture !== "Reactive") return undefined
  if (!trigger.expect.some((e) => e.startsWith("prefect.flow-run.")) || !trigger.expect.some((e) => RUN_LIFECYCLE_EVENTS.has(e))) {
    return undefined
  }
  for (const action of automation.actions) {
    if (action.type !== "run-deployment") continue
    if (action.source === "inferred") {
      return "Running an inferred deployment from a flow run state change event will lead to an infinite loop of flow runs.  Please choose a specific deployment and add additional filtering labels to the match or match_related for this automation's trigger."
    }
    const related = Array.isArray(trigger.match_related) ? trigger.match_related : [trigger.match_related as ResourceSpecification]
    if (matchesEveryFlowRun(trigger.match) && related.some(matchesEveryFlowRun)) {
      return "Running a selected deployment from a flow run state change event may lead to an infinite loop of flow runs.  Please include additional filtering labels on either match or match_related to narrow down which flow runs will trigger this automation to exclude flow runs from the deployment you've selected."
    }
  }
  return undefined
}
