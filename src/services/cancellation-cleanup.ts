/**
 * Cancellation cleanup: what a cancelled flow run leaves behind is cancelled too — its unfinished
 * task runs and subflow runs (Cancelling when a deployment's worker must stop its infrastructure,
 * Cancelled otherwise) — and runs still waiting for a deployment that was deleted.
 */
import { Effect, Layer } from "effect"
import { emptyStateDetails, type StateCreate } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { onlyWhile, UNFINISHED_STATES } from "../orchestration/engine.ts"
import { minimalFlowPolicy } from "../orchestration/flow-policy.ts"
import { Orchestrator } from "../orchestration/orchestrator.ts"
import { minimalTaskPolicy } from "../orchestration/task-policy.ts"
import { CancellationCleanupRepo } from "./cancellation-cleanup-repo.ts"
import { defineService, loopSeconds, registerServices } from "./runner.ts"

const BATCH = 200
const DAY_MS = 86_400_000

const stateOf = (type: "CANCELLED" | "CANCELLING", message: string): StateCreate => ({
  type,
  name: null,
  message,
  data: null,
  state_details: emptyStateDetails
})

const PARENT_CANCELLED = "The parent flow run was cancelled."

// Each run changes only while it is still as the pass found it (read under its row lock), so a pass
// overlapping another replica's never writes a second Cancelled or Cancelling state.
const unfinished = onlyWhile("StillUnfinished", (initial, _now, proposed) =>
  initial !== null && UNFINISHED_STATES.has(initial.type) && initial.type !== proposed.type)
const cancelTaskPolicy = [unfinished, ...minimalTaskPolicy]
const cancelSubflowPolicy = [unfinished, ...minimalFlowPolicy]
const cancelStrandedPolicy = [onlyWhile("StillScheduled", (initial) => initial?.type === "SCHEDULED"), ...minimalFlowPolicy]

/** Runs `effect` for one row; a failure is logged and the rest go on. */
const each = <A>(items: ReadonlyArray<A>, what: string, effect: (item: A) => Effect.Effect<unknown, unknown>) =>
  Effect.forEach(items, (item) =>
    effect(item).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`Could not cancel ${what} ${String(item)}`, cause))),
    { discard: true }
  )

/** One pass. */
export const cleanUpCancellations = Effect.gen(function* () {
  const runs = yield* CancellationCleanupRepo
  const orchestrator = yield* Orchestrator
  const at = yield* now

  const tasks = yield* runs.unfinishedTaskRuns(new Date(at.getTime() - DAY_MS), BATCH)
  yield* each(tasks, "task run", (id) => orchestrator.setTaskRunState(id, stateOf("CANCELLED", PARENT_CANCELLED), true, cancelTaskPolicy))

  const subflows = yield* runs.orphanedSubflows(BATCH)
  yield* each(subflows.filter((s) => !(s.deployment_id !== null && s.state_type === "CANCELLING")), "subflow run", (s) =>
    // A deployment's run has infrastructure its worker must stop: Cancelling, which the worker completes.
    orchestrator.setFlowRunState(s.id, stateOf(s.deployment_id === null ? "CANCELLED" : "CANCELLING", PARENT_CANCELLED), { rules: cancelSubflowPolicy })
  )

  const stranded = yield* runs.scheduledWithoutDeployment(BATCH)
  yield* each(stranded, "flow run", (id) =>
    orchestrator.setFlowRunState(id, stateOf("CANCELLED", "The deployment of this flow run was deleted."), { rules: cancelStrandedPolicy })
  )
})

export const CancellationCleanupService = registerServices(
  defineService({
    name: "cancellation_cleanup",
    interval: loopSeconds((s) => s.cancellation_cleanup),
    tick: cleanUpCancellations,
    singleton: true
  })
).pipe(Layer.provide([CancellationCleanupRepo.Default, Orchestrator.Default]))
