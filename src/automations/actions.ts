/**
 * The actions service: performs the actions of triggered automations through the server's own
 * services (the same rules as the API: orchestration for state changes, the deployment, work pool
 * and queue services for pauses), and records each as `prefect.automation.action.triggered`
 * followed by `.executed` or `.failed` (with the reason). An action is performed once: a repeated
 * invocation within the hour is skipped.
 *
 * Templated fields (webhook payloads, notification subject and body, run-deployment parameters)
 * are rendered with `automation`, `event`, `labels`, `firing`, `firings`, `events`, and the objects
 * the triggering event names that a template mentions (`flow_run`, `flow`, `deployment`,
 * `work_pool`, `work_queue`, `task_run`), plus `variables`.
 */
import { Chunk, Effect, Either, Queue, Schema } from "effect"
import { BlockDocuments } from "../blocks/documents-service.ts"
import { DeploymentsRepo } from "../deployments/repo.ts"
import { DeploymentRuns } from "../deployments/runs.ts"
import { DeploymentFlowRunCreate } from "../deployments/schemas.ts"
import { Deployments } from "../deployments/service.ts"
import { newId } from "../domain/ids.ts"
import { hydrate, referencedVariables } from "../domain/parameters.ts"
import { isObject } from "../domain/schemas.ts"
import { emptyStateDetails, type StateCreate } from "../domain/states.ts"
import { renderTemplate, templateBudget } from "../domain/templates.ts"
import { now } from "../domain/time.ts"
import type { ReceivedEvent } from "../events/schemas.ts"
import { Events } from "../events/service.ts"
import { FlowRunsRepo } from "../flow-runs/repo.ts"
import { FlowRunResume } from "../flow-runs/resume.ts"
import { FlowsRepo } from "../flows/repo.ts"
import { TaskRunsRepo } from "../task-runs/repo.ts"
import { VariablesRepo } from "../variables/repo.ts"
import { WorkPools } from "../work-pools/pools.ts"
import { WorkQueuesRepo } from "../work-pools/queues-repo.ts"
import { WorkPoolsRepo } from "../work-pools/repo.ts"
import { allEvents, allFirings, eventJson, type TriggeredAction } from "./firing.ts"
import { type ActionFailed, actionFailed, callWebhook, notify, type OutboundLimits, type OutboundResponse } from "./outbound.ts"
import { Automation, type Action } from "./schemas.ts"
import { Automations } from "./service.ts"
import { templateFilters } from "./template-filters.ts"
import { Settings } from "../settings/settings.ts"

const RECENT_MS = 60 * 60 * 1000
const TIGHT_TIMING_MS = 5 * 60 * 1000
const SUSPEND_TIMEOUT_MS = 3600 * 1000

const encodeAutomation = Schema.encodeSync(Automation)
const decodeRunCreate = Schema.decodeUnknownSync(DeploymentFlowRunCreate)

/** The first resource (own or related) of the event whose id is `<kind>.<id>`. */
const resourceOfKind = (event: ReceivedEvent | null, kind: string) =>
  event === null ? undefined : [event.resource, ...event.related].find((r) => kindOf(r["prefect.resource.id"]!) === kind)

const kindOf = (resourceId: string) => resourceId.slice(0, Math.max(0, resourceId.lastIndexOf(".")))

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The object id of a resource id of the given kind. */
const idOfKind = (resourceId: string | undefined, kind: string) => {
  if (resourceId === undefined || kindOf(resourceId) !== kind) return undefined
  const id = resourceId.slice(kind.length + 1)
  return UUID.test(id) ? id : undefined
}

/** JSON as templates and payloads see it (dates as ISO strings). */
const plain = (value: unknown) => (value === undefined ? null : JSON.parse(JSON.stringify(value)))

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

/** The reference's reason for an answer the action did not want. */
const statusReason = (type: string, status: number, detail?: unknown) =>
  (status === 409 || status === 422) && detail !== undefined
    ? `Validation error occurred for '${type}' - ${typeof detail === "string" ? detail : JSON.stringify(detail)}`
    : `Unexpected status from '${type}' action: ${status}`

const STATUS_OF_ERROR: Record<string, number> = { NotFound: 404, Conflict: 409, ValidationError: 422, BadRequest: 400, Forbidden: 403 }

export class AutomationActions extends Effect.Service<AutomationActions>()("baton/AutomationActions", {
  effect: Effect.gen(function* () {
    const queue = yield* Queue.unbounded<TriggeredAction>()
    const events = yield* Events
    const deployments = yield* Deployments
    const deploymentsRepo = yield* DeploymentsRepo
    const deploymentRuns = yield* DeploymentRuns
    const flowRuns = yield* FlowRunsRepo
    const resumer = yield* FlowRunResume
    const flows = yield* FlowsRepo
    const taskRuns = yield* TaskRunsRepo
    const pools = yield* WorkPools
    const poolsRepo = yield* WorkPoolsRepo
    const queues = yield* WorkQueuesRepo
    const automations = yield* Automations
    const blocks = yield* BlockDocuments
    const variables = yield* VariablesRepo
    const performed = new Map<string, number>()
    const settings = yield* Settings
    const api = settings.server.api
    const host = api.host === "0.0.0.0" || api.host === "::" ? "127.0.0.1" : api.host
    const filters = templateFilters(`http://${host}:${api.port}${settings.server.ui.serve_base.replace(/\/?$/, "/")}`)
    const eventSettings = settings.server.events
    const limits: OutboundLimits = {
      connectMs: eventSettings.action_connect_timeout_seconds * 1000,
      totalMs: eventSettings.action_timeout_seconds * 1000,
      maxTotalMs: eventSettings.action_max_timeout_seconds * 1000
    }

    const enqueue = (actions: ReadonlyArray<TriggeredAction>) => Effect.asVoid(Queue.offerAll(queue, actions))

    /** Runs an API-level operation; its declared errors become the reason the action failed. */
    const command = <A, R>(type: string, effect: Effect.Effect<A, unknown, R>, details: Record<string, unknown>, okStatus = 200) =>
      effect.pipe(
        Effect.tap(() => Effect.sync(() => (details.status_code = okStatus))),
        Effect.catchAll((error) => {
          const tag = (error as { _tag?: string })._tag ?? ""
          const status = STATUS_OF_ERROR[tag]
          if (status === undefined) return Effect.fail(actionFailed(`Action '${type}' failed: ${String(error)}`))
          details.status_code = status
          return Effect.fail(actionFailed(statusReason(type, status, (error as { detail?: unknown }).detail)))
        })
      )

    // Templates --------------------------------------------------------------------------------

    const OBJECT_KINDS = ["flow_run", "flow", "deployment", "work_pool", "work_queue", "task_run"] as const

    const readObject = (kind: (typeof OBJECT_KINDS)[number], id: string): Effect.Effect<unknown, unknown> => {
      switch (kind) {
        case "flow_run":
          return flowRuns.read(id)
        case "flow":
          return flows.read(id)
        case "deployment":
          return deploymentsRepo.read(id)
        case "work_pool":
          return poolsRepo.readPoolById(id)
        case "work_queue":
          return queues.readQueue(id)
        case "task_run":
          return taskRuns.read(id)
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
          context[kind] = id === undefined ? null : plain(yield* Effect.orElseSucceed(readObject(kind, id), () => undefined))
        }
        if (/\bvariables\b/.test(text)) {
          const all = yield* Effect.orDie(variables.filter({ filter: null, sort: "NAME_ASC", offset: 0, limit: 1000 }))
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

    // Targets ----------------------------------------------------------------------------------

    const target = (ta: TriggeredAction, action: { readonly source: "selected" | "inferred" }, selectedId: string | null, kind: string, noun: string) => {
      if (action.source === "selected") return Effect.succeed(selectedId!)
      if (ta.triggering_event === null) return Effect.fail(actionFailed(`No event to infer the ${noun}`))
      const id = idOfKind(resourceOfKind(ta.triggering_event, kind)?.["prefect.resource.id"], kind)
      return id === undefined ? Effect.fail(actionFailed(`No ${noun} could be inferred`)) : Effect.succeed(id)
    }

    const flowRunTarget = (ta: TriggeredAction) => {
      const fromLabels = idOfKind(ta.triggering_labels["prefect.resource.id"], "prefect.flow-run")
      if (fromLabels !== undefined) return Effect.succeed(fromLabels)
      const fromEvent = idOfKind(resourceOfKind(ta.triggering_event, "prefect.flow-run")?.["prefect.resource.id"], "prefect.flow-run")
      return fromEvent === undefined ? Effect.fail(actionFailed("No flow run could be inferred")) : Effect.succeed(fromEvent)
    }

    const targetResource = (kind: string, id: string, name?: string | null) => ({
      "prefect.resource.id": `prefect.${kind}.${id}`,
      "prefect.resource.role": "target",
      ...(name ? { "prefect.resource.name": name } : {})
    })

    /** Proposes a state for the flow run; anything but ACCEPT fails the action. */
    const changeState = (ta: TriggeredAction, state: StateCreate, force: boolean, related: Array<Record<string, string>>, details: Record<string, unknown>) =>
      Effect.gen(function* () {
        const id = yield* flowRunTarget(ta)
        related.push(targetResource("flow-run", id))
        const result = yield* Effect.orDie(flowRuns.setState(id, state, force))
        if (result === undefined) {
          details.status_code = 404
          return yield* actionFailed(statusReason(ta.action.type, 404))
        }
        details.status_code = result.created ? 201 : 200
        if (result.status !== "ACCEPT") return yield* actionFailed(`Failed to set state: ${("reason" in result.details ? result.details.reason : null) ?? result.status}`)
      })

    const blockDocument = (ta: TriggeredAction, id: string, related: Array<Record<string, string>>, details: Record<string, unknown>) =>
      Effect.gen(function* () {
        const document = yield* Effect.orDie(blocks.read(id, true))
        if (document === undefined) {
          details.status_code = 404
          return yield* actionFailed(statusReason(ta.action.type, 404))
        }
        related.push(
          { "prefect.resource.id": `prefect.block-document.${id}`, "prefect.resource.role": "block", "prefect.resource.name": document.name ?? "" },
          { "prefect.resource.id": `prefect.block-type.${document.block_type?.slug ?? ""}`, "prefect.resource.role": "block-type" }
        )
        return document
      })

    const keepResponse = (details: Record<string, unknown>) => (response: OutboundResponse) => Effect.sync(() => Object.assign(details, response))

    /** Performs one action; what it touched goes into `related`, what it learned into `details`. */
    const act = (ta: TriggeredAction, related: Array<Record<string, string>>, details: Record<string, unknown>): Effect.Effect<void, ActionFailed> => {
      const action: Action = ta.action
      const automationId = ta.automation.id
      switch (action.type) {
        case "do-nothing":
          return Effect.logDebug(`Automation ${automationId}: doing nothing`)
        case "pause-deployment":
        case "resume-deployment":
          return Effect.gen(function* () {
            const id = yield* target(ta, action, action.deployment_id, "prefect.deployment", "deployment")
            related.push(targetResource("deployment", id))
            yield* command(action.type, action.type === "pause-deployment" ? deployments.pause(id) : deployments.resume(id), details)
          })
        case "run-deployment":
          return Effect.gen(function* () {
            const id = yield* target(ta, action, action.deployment_id, "prefect.deployment", "deployment")
            related.push(targetResource("deployment", id))
            const upgraded = upgradeTemplates(action.parameters ?? {})
            const context = yield* templateContext([JSON.stringify(upgraded)], ta)
            const values = yield* Effect.orDie(variables.valuesByName(referencedVariables(upgraded)))
            const parameters = hydrate(upgraded, { variable: (name) => (values.has(name) ? values.get(name) : undefined), jinja: context, filters })
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
        case "change-flow-run-state":
          return changeState(
            ta,
            {
              type: action.state,
              name: action.name,
              message: action.message || `State changed by Automation ${automationId}`,
              data: null,
              state_details: emptyStateDetails
            },
            action.force,
            related,
            details
          )
        case "cancel-flow-run":
          return changeState(
            ta,
            { type: "CANCELLING", name: null, message: `Cancelled by Automation ${automationId}`, data: null, state_details: emptyStateDetails },
            false,
            related,
            details
          )
        case "suspend-flow-run":
          return Effect.flatMap(now, (at) =>
            changeState(
              ta,
              {
                type: "PAUSED",
                name: "Suspended",
                message: `Suspended by Automation ${automationId}`,
                data: null,
                state_details: { ...emptyStateDetails, pause_timeout: new Date(at.getTime() + SUSPEND_TIMEOUT_MS), pause_reschedule: true }
              },
              false,
              related,
              details
            )
          )
        case "resume-flow-run":
          return Effect.gen(function* () {
            const id = yield* flowRunTarget(ta)
            related.push(targetResource("flow-run", id))
            const result = yield* resumer.resume(id, null)
            if (result === undefined) return yield* actionFailed(statusReason(action.type, 404))
            if (result.status !== "ACCEPT") return yield* actionFailed(`Failed to resume flow run: ${("reason" in result.details ? result.details.reason : null) ?? result.status}`)
          })
        case "delete-flow-run":
          return Effect.gen(function* () {
            const id = yield* flowRunTarget(ta)
            related.push(targetResource("flow-run", id))
            const removed = yield* Effect.orDie(flowRuns.remove(id))
            details.status_code = removed ? 204 : 404
            if (!removed) return yield* actionFailed(statusReason(action.type, 404))
          })
        case "pause-work-queue":
        case "resume-work-queue":
          return Effect.gen(function* () {
            const id = yield* target(ta, action, action.work_queue_id, "prefect.work-queue", "work queue")
            related.push(targetResource("work-queue", id))
            const found = yield* Effect.orDie(queues.readQueue(id))
            if (found === undefined) {
              details.status_code = 404
              return yield* actionFailed(statusReason(action.type, 404))
            }
            yield* command(action.type, pools.updateQueue(found, { is_paused: action.type === "pause-work-queue" }, { rebalance: false }), details, 204)
          })
        case "pause-work-pool":
        case "resume-work-pool":
          return Effect.gen(function* () {
            const id = yield* target(ta, action, action.work_pool_id, "prefect.work-pool", "work pool")
            const pool = yield* Effect.orDie(poolsRepo.readPoolById(id))
            if (pool === undefined) return yield* actionFailed(`Work pool ${id} not found`)
            related.push(targetResource("work-pool", id, pool.name))
            yield* command(action.type, pools.update(pool.name, { is_paused: action.type === "pause-work-pool" }), details, 204)
          })
        case "pause-automation":
        case "resume-automation":
          return Effect.gen(function* () {
            const id = yield* target(ta, action, action.automation_id, "prefect.automation", "automation")
            related.push(targetResource("automation", id))
            yield* command(action.type, automations.setEnabled(id, action.type === "resume-automation"), details, 204)
          })
        case "call-webhook":
          return Effect.gen(function* () {
            const document = yield* blockDocument(ta, action.block_document_id, related, details)
            if (document.block_type?.slug !== "webhook") return yield* actionFailed("The referenced block was not a webhook block")
            const [payload] = yield* render([action.payload], ta, details)
            yield* Effect.flatMap(callWebhook(document.data, payload!, limits), keepResponse(details))
          })
        case "send-notification":
          return Effect.gen(function* () {
            const document = yield* blockDocument(ta, action.block_document_id, related, details)
            if (!(document.block_schema?.capabilities ?? []).includes("notify")) {
              return yield* actionFailed("The referenced block was not a notification block")
            }
            const [subject, body] = yield* render([action.subject, action.body], ta, details)
            const response = yield* notify(document.block_type?.slug ?? "", document.data, subject!, body!, limits).pipe(
              Effect.catchTag("CallFailed", (failed) => {
                // As the reference: the reason stays "Notification failed", what happened is the log.
                details.notification_log = failed.description
                return Effect.fail(actionFailed("Notification failed"))
              })
            )
            if (response.status_code >= 300) {
              details.notification_log = response.response_body
              return yield* actionFailed("Notification failed")
            }
          })
      }
    }

    /** The action's resource: the automation, its trigger type and posture. */
    const automationResource = (ta: TriggeredAction) => {
      const resource: Record<string, string> = {
        "prefect.resource.id": `prefect.automation.${ta.automation.id}`,
        "prefect.resource.name": ta.automation.name,
        "prefect.trigger-type": ta.automation.trigger.type
      }
      if (ta.automation.trigger.type === "event") resource["prefect.posture"] = ta.automation.trigger.posture
      return resource
    }

    /** Performs the action and records it: `.triggered`, then `.executed` or `.failed`. */
    const perform = (ta: TriggeredAction) =>
      Effect.gen(function* () {
        const at = (yield* now).getTime()
        for (const [id, when] of performed) if (at - when > RECENT_MS) performed.delete(id)
        if (performed.has(ta.id)) return
        const related: Array<Record<string, string>> = []
        const details: Record<string, unknown> = {}
        const outcome = yield* Effect.either(
          act(ta, related, details).pipe(
            Effect.catchAllDefect((defect) => Effect.fail(actionFailed(`Action '${ta.action.type}' failed unexpectedly: ${String(defect)}`)))
          )
        )
        if (Either.isLeft(outcome)) {
          yield* Effect.logWarning(`Automation ${ta.automation.id} action ${ta.action_index} (${ta.action.type}) failed: ${outcome.left.reason}`)
        } else {
          performed.set(ta.id, at)
        }
        if (ta.automation_triggered_event_id) {
          related.push({ "prefect.resource.id": `prefect.event.${ta.automation_triggered_event_id}`, "prefect.resource.role": "automation-triggered-event" })
        }
        if (ta.triggering_event) {
          related.push({ "prefect.resource.id": `prefect.event.${ta.triggering_event.id}`, "prefect.resource.role": "triggering-event" })
        }
        const resource = automationResource(ta)
        const payload = { action_index: ta.action_index, action_type: ta.action.type, invocation: ta.id }
        const tight = ta.triggering_event !== null && Math.abs(ta.triggered.getTime() - ta.triggering_event.occurred.getTime()) < TIGHT_TIMING_MS
        const triggeredId = yield* newId
        yield* events.emit([
          { id: triggeredId, occurred: ta.triggered, event: "prefect.automation.action.triggered", resource, related, payload, follows: tight ? ta.triggering_event!.id : null },
          Either.isLeft(outcome)
            ? {
                id: yield* newId,
                occurred: yield* now,
                event: "prefect.automation.action.failed",
                resource,
                related,
                payload: { ...payload, reason: outcome.left.reason, ...details },
                follows: triggeredId
              }
            : {
                id: yield* newId,
                occurred: yield* now,
                event: "prefect.automation.action.executed",
                resource,
                related,
                payload: { ...payload, ...details },
                follows: triggeredId
              }
        ])
      })

    const performAll = (batch: ReadonlyArray<TriggeredAction>) =>
      Effect.forEach(batch, (ta) =>
        perform(ta).pipe(Effect.catchAllCause((cause) => Effect.logError(`Automation action ${ta.id} could not be recorded`, cause))), { discard: true })

    /** Waits for triggered actions and performs them in order. */
    const tick = Effect.flatMap(Queue.takeBetween(queue, 1, 50), (batch) => performAll(Chunk.toReadonlyArray(batch)))

    /** Performs the actions queued now, without waiting for more (tests, shutdown). */
    const drain = Effect.flatMap(Queue.takeAll(queue), (batch) => performAll(Chunk.toReadonlyArray(batch)))

    return { enqueue, perform, tick, drain } as const
  }),
  dependencies: [
    Automations.Default,
    BlockDocuments.Default,
    DeploymentRuns.Default,
    Deployments.Default,
    DeploymentsRepo.Default,
    Events.Default,
    FlowRunResume.Default,
    FlowRunsRepo.Default,
    FlowsRepo.Default,
    TaskRunsRepo.Default,
    VariablesRepo.Default,
    WorkPools.Default,
    WorkPoolsRepo.Default,
    WorkQueuesRepo.Default
  ]
}) {}
