/**
 * The flow run actions, on the run the firing names: change its state (through orchestration, as
 * the API would), cancel it, suspend it, resume it, delete it.
 */
import { Effect, Option } from "effect"
import { emptyStateDetails, type StateCreate } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { FlowRunsRepo } from "../flow-runs/repo.ts"
import { FlowRunResume } from "../flow-runs/resume.ts"
import { Orchestrator } from "../orchestration/orchestrator.ts"
import { flowRunTarget, type Perform, type Performers, statusReason, targetResource } from "./action-performer.ts"
import type { TriggeredAction } from "./firing.ts"
import { actionFailed } from "./outbound.ts"

const SUSPEND_TIMEOUT_MS = 3600 * 1000

type FlowRunActionType = "change-flow-run-state" | "cancel-flow-run" | "suspend-flow-run" | "resume-flow-run" | "delete-flow-run"

export const makeFlowRunActions = Effect.gen(function* () {
  const flowRuns = yield* FlowRunsRepo
  const resumer = yield* FlowRunResume
  const orchestrator = yield* Orchestrator

  /** Proposes a state for the flow run; anything but ACCEPT fails the action. */
  const changeState = (ta: TriggeredAction, state: StateCreate, force: boolean, related: Array<Record<string, string>>, details: Record<string, unknown>) =>
    Effect.gen(function* () {
      const id = yield* flowRunTarget(ta)
      related.push(targetResource("flow-run", id))
      const outcome = yield* orchestrator.setFlowRunState(id, state, { force })
      if (Option.isNone(outcome)) {
        details.status_code = 404
        return yield* actionFailed(statusReason(ta.action.type, 404))
      }
      const result = outcome.value
      details.status_code = result.created ? 201 : 200
      if (result.status !== "ACCEPT") return yield* actionFailed(`Failed to set state: ${("reason" in result.details ? result.details.reason : null) ?? result.status}`)
    })

  const change: Perform<"change-flow-run-state"> = (ta, action, related, details) =>
    changeState(
      ta,
      {
        type: action.state,
        name: action.name,
        message: action.message || `State changed by Automation ${ta.automation.id}`,
        data: null,
        state_details: emptyStateDetails
      },
      action.force,
      related,
      details
    )

  const cancel: Perform<"cancel-flow-run"> = (ta, _action, related, details) =>
    changeState(
      ta,
      { type: "CANCELLING", name: null, message: `Cancelled by Automation ${ta.automation.id}`, data: null, state_details: emptyStateDetails },
      false,
      related,
      details
    )

  const suspend: Perform<"suspend-flow-run"> = (ta, _action, related, details) =>
    Effect.flatMap(now, (at) =>
      changeState(
        ta,
        {
          type: "PAUSED",
          name: "Suspended",
          message: `Suspended by Automation ${ta.automation.id}`,
          data: null,
          state_details: { ...emptyStateDetails, pause_timeout: new Date(at.getTime() + SUSPEND_TIMEOUT_MS), pause_reschedule: true }
        },
        false,
        related,
        details
      )
    )

  const resume: Perform<"resume-flow-run"> = (ta, action, related) =>
    Effect.gen(function* () {
      const id = yield* flowRunTarget(ta)
      related.push(targetResource("flow-run", id))
      const outcome = yield* resumer.resume(id, null)
      if (Option.isNone(outcome)) return yield* actionFailed(statusReason(action.type, 404))
      const result = outcome.value
      if (result.status !== "ACCEPT") return yield* actionFailed(`Failed to resume flow run: ${("reason" in result.details ? result.details.reason : null) ?? result.status}`)
    })

  const remove: Perform<"delete-flow-run"> = (ta, action, related, details) =>
    Effect.gen(function* () {
      const id = yield* flowRunTarget(ta)
      related.push(targetResource("flow-run", id))
      const removed = yield* flowRuns.remove(id)
      details.status_code = removed ? 204 : 404
      if (!removed) return yield* actionFailed(statusReason(action.type, 404))
    })

  return {
    "change-flow-run-state": change,
    "cancel-flow-run": cancel,
    "suspend-flow-run": suspend,
    "resume-flow-run": resume,
    "delete-flow-run": remove
  } satisfies Performers<FlowRunActionType>
})
