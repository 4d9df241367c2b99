/**
 * The actions service: performs the actions of triggered automations through the server's own
 * services (the same rules as the API: orchestration for state changes, the deployment, work pool
 * and queue services for pauses), and records each as `prefect.automation.action.triggered`
 * followed by `.executed` or `.failed` (with the reason). An action is performed once: a repeated
 * invocation within the hour is skipped.
 *
 * Each kind of action is performed by its module (action-deployments.ts, action-flow-runs.ts,
 * action-toggles.ts, action-notifications.ts), found by its type in one table; templated fields are
 * rendered as action-templates.ts says.
 */
import { Chunk, Effect, Either, Queue } from "effect"
import { BlockDocuments } from "../blocks/documents-service.ts"
import { DeploymentsRepo } from "../deployments/repo.ts"
import { DeploymentRuns } from "../deployments/runs.ts"
import { Deployments } from "../deployments/service.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { Events } from "../events/service.ts"
import { FlowRunsRepo } from "../flow-runs/repo.ts"
import { FlowRunResume } from "../flow-runs/resume.ts"
import { Orchestrator } from "../orchestration/orchestrator.ts"
import { FlowsRepo } from "../flows/repo.ts"
import { TaskRunsRepo } from "../task-runs/repo.ts"
import { VariablesRepo } from "../variables/repo.ts"
import { WorkPools } from "../work-pools/pools.ts"
import { WorkQueuesRepo } from "../work-pools/queues-repo.ts"
import { WorkPoolsRepo } from "../work-pools/repo.ts"
import { makeDeploymentActions } from "./action-deployments.ts"
import { makeFlowRunActions } from "./action-flow-runs.ts"
import { makeNotificationActions } from "./action-notifications.ts"
import type { ActionType, Perform, Performers } from "./action-performer.ts"
import { makeActionTemplates } from "./action-templates.ts"
import { makeToggleActions } from "./action-toggles.ts"
import type { TriggeredAction } from "./firing.ts"
import { type ActionFailed, actionFailed } from "./outbound.ts"
import { Automations } from "./service.ts"

const RECENT_MS = 60 * 60 * 1000
const TIGHT_TIMING_MS = 5 * 60 * 1000

export class AutomationActions extends Effect.Service<AutomationActions>()("baton/AutomationActions", {
  effect: Effect.gen(function* () {
    const queue = yield* Queue.unbounded<TriggeredAction>()
    const events = yield* Events
    const performed = new Map<string, number>()
    const templates = yield* makeActionTemplates

    const performers: Performers<ActionType> = {
      "do-nothing": (ta) => Effect.logDebug(`Automation ${ta.automation.id}: doing nothing`),
      ...(yield* makeDeploymentActions(templates)),
      ...(yield* makeFlowRunActions),
      ...(yield* makeToggleActions),
      ...(yield* makeNotificationActions(templates))
    }

    const enqueue = (actions: ReadonlyArray<TriggeredAction>) => Effect.asVoid(Queue.offerAll(queue, actions))

    /** Performs one action with the performer of its type. */
    const act = (ta: TriggeredAction, related: Array<Record<string, string>>, details: Record<string, unknown>): Effect.Effect<void, ActionFailed> =>
      (performers[ta.action.type] as Perform<ActionType>)(ta, ta.action, related, details)

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
    Orchestrator.Default,
    TaskRunsRepo.Default,
    VariablesRepo.Default,
    WorkPools.Default,
    WorkPoolsRepo.Default,
    WorkQueuesRepo.Default
  ]
}) {}
