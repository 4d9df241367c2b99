/**
 * The actions service: performs the actions of triggered automations through the server's own
 * services (the same rules as the API: orchestration for state changes, the deployment, work pool
 * and queue services for pauses), and records each as `prefect.automation.action.triggered`
 * followed by `.executed` or `.failed` (with the reason). The actions of a firing are stored with
 * it (`automation_triggered_action`) and performed once it commits, oldest first, by the process that
 * claims them; their events are written and the action forgotten in one transaction, so a process
 * killed in between leaves the action for another (after its claim of five minutes runs out). An
 * action is performed once per process: a repeated invocation within the hour is skipped.
 *
 * Each kind of action is performed by its module (action-deployments.ts, action-flow-runs.ts,
 * action-toggles.ts, action-notifications.ts), found by its type in one table; templated fields are
 * rendered as action-templates.ts says.
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Either, Queue, Schema } from "effect"
import { inTransaction } from "../database/errors.ts"
import { afterCommit } from "../database/transactions.ts"
import { ReceivedEvent } from "../events/schemas.ts"
import { BlockDocuments } from "../blocks/documents-service.ts"
import { DeploymentsRepo } from "../deployments/repo.ts"
import { DeploymentRuns } from "../deployments/runs.ts"
import { Deployments } from "../deployments/service.ts"
import { newId } from "../domain/ids.ts"
import { now, realClock } from "../domain/time.ts"
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
import { reviveFiring, type TriggeredAction } from "./firing.ts"
import { TriggeredActionsRepo } from "./actions-repo.ts"
import { ActionSchema, Automation } from "./schemas.ts"
import { type ActionFailed, actionFailed } from "./outbound.ts"
import { Automations } from "./service.ts"

const RECENT_MS = 60 * 60 * 1000
const TIGHT_TIMING_MS = 5 * 60 * 1000
/** How long a process holds the actions it claimed: past that, another takes over those it did not finish. */
const CLAIM_MS = 5 * 60 * 1000
const CLAIM_BATCH = 50
/** How long the actions loop waits for this process's firings before looking anyway. */
const LOOK_ANYWAY = Duration.seconds(5)

const encodeAutomation = Schema.encodeSync(Automation)
const decodeAutomation = Schema.decodeUnknownSync(Automation)
const encodeAction = Schema.encodeSync(ActionSchema)
const decodeAction = Schema.decodeUnknownSync(ActionSchema)
const encodeEvent = Schema.encodeSync(ReceivedEvent)
const decodeEvent = Schema.decodeUnknownSync(ReceivedEvent)

/** A triggered action as it is stored (JSON). */
const toBody = (ta: TriggeredAction) => ({
  id: ta.id,
  automation: encodeAutomation(ta.automation),
  firing: JSON.parse(JSON.stringify(ta.firing)),
  triggered: ta.triggered.toISOString(),
  triggering_labels: ta.triggering_labels,
  triggering_event: ta.triggering_event === null ? null : encodeEvent(ta.triggering_event),
  action: encodeAction(ta.action),
  action_index: ta.action_index,
  automation_triggered_event_id: ta.automation_triggered_event_id
})

const fromBody = (body: any): TriggeredAction => ({
  id: body.id,
  automation: decodeAutomation(body.automation),
  firing: reviveFiring(body.firing),
  triggered: new Date(body.triggered),
  triggering_labels: body.triggering_labels,
  triggering_event: body.triggering_event === null ? null : decodeEvent(body.triggering_event),
  action: decodeAction(body.action),
  action_index: body.action_index,
  automation_triggered_event_id: body.automation_triggered_event_id
})

export class AutomationActions extends Effect.Service<AutomationActions>()("baton/AutomationActions", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* TriggeredActionsRepo
    // Woken by this process's firings once they commit.
    const wake = yield* Queue.sliding<void>(1)
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

    /** Performs the action; the events that record it: `.triggered`, then `.executed` or `.failed` (none for a repeat). */
    const performRecorded = (ta: TriggeredAction) =>
      Effect.gen(function* () {
        const at = (yield* now).getTime()
        for (const [id, when] of performed) if (at - when > RECENT_MS) performed.delete(id)
        if (performed.has(ta.id)) return []
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
        return [
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
        ]
      })

    /** Performs the action and records it (its events written at once). */
    const perform = (ta: TriggeredAction) => Effect.flatMap(performRecorded(ta), (recorded) => Effect.asVoid(events.emit(recorded)))

    /**
     * Stores the actions of a firing, in the firing's transaction when there is one: they are
     * performed once it commits, by this process or, should it die first, by another.
     */
    const enqueue = (actions: ReadonlyArray<TriggeredAction>) =>
      actions.length === 0
        ? Effect.void
        : Effect.zipRight(repo.add(actions.map((ta) => ({ id: ta.id, body: toBody(ta) }))), afterCommit(Effect.asVoid(Queue.offer(wake, undefined))))

    /** Performs one stored action, then writes its events and forgets it in one transaction. */
    const performStored = (body: unknown) =>
      Effect.gen(function* () {
        const decoded = Either.try(() => fromBody(body))
        const id = (body as { id?: unknown })?.id
        if (Either.isLeft(decoded)) {
          yield* Effect.logError(`Automation action ${String(id)} could not be read and is dropped`, decoded.left)
          if (typeof id === "string") yield* repo.done(id)
          return
        }
        const ta = decoded.right
        const recorded = yield* performRecorded(ta)
        yield* inTransaction(sql, Effect.zipRight(events.emit(recorded), repo.done(ta.id)))
      }).pipe(Effect.catchAllCause((cause) => Effect.logError(`Automation action could not be recorded`, cause)))

    /** Performs the stored actions no process holds, oldest first, until none is left. */
    const drain = Effect.gen(function* () {
      while (true) {
        const at = yield* now
        const claimed = yield* repo.claim(at, new Date(at.getTime() + CLAIM_MS), CLAIM_BATCH)
        if (claimed.length === 0) return
        for (const body of claimed) yield* performStored(body)
      }
    })

    /** Waits for actions this process stored (or a while, for those a dead process left), then performs them. */
    const tick = Effect.zipRight(
      Effect.raceFirst(Queue.take(wake), Effect.withClock(Effect.sleep(LOOK_ANYWAY), realClock)),
      drain
    )

    return { enqueue, perform, tick, drain } as const
  }),
  dependencies: [
    TriggeredActionsRepo.Default,
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
