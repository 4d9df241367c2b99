/**
 * Late runs: a run still Scheduled `after_seconds` past its scheduled time becomes "Late" (a Scheduled
 * state of that name, keeping its scheduled time), so users and automations see it has not started.
 * A late run whose deployment's limit is full and says CANCEL_NEW is cancelled instead.
 */
import { Duration, Effect, Layer } from "effect"
import { emptyStateDetails } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { markLateRunsPolicy } from "../orchestration/flow-policy.ts"
import { Orchestrator } from "../orchestration/orchestrator.ts"
import { Settings } from "../settings/settings.ts"
import { LateRunsRepo } from "./late-runs-repo.ts"
import { defineService, loopSeconds, registerServices } from "./runner.ts"

const BATCH = 400

/** One pass. */
export const markLateRuns = Effect.gen(function* () {
  const runs = yield* LateRunsRepo
  const orchestrator = yield* Orchestrator
  const after = (yield* Settings).server.services.late_runs.after_seconds
  const at = yield* now
  const overdue = yield* runs.overdue(new Date(at.getTime() - Duration.toMillis(after)), BATCH)
  for (const run of overdue) {
    const late = {
      type: "SCHEDULED" as const,
      name: "Late",
      message: null,
      data: null,
      state_details: { ...emptyStateDetails, scheduled_time: run.next_scheduled_start_time }
    }
    const change = run.cancel_new_limit_full
      ? orchestrator.setFlowRunState(
        run.id,
        { ...late, type: "CANCELLED", name: null, message: "Deployment concurrency limit reached.", state_details: emptyStateDetails },
        { force: true }
      )
      : orchestrator.setFlowRunState(run.id, late, { rules: markLateRunsPolicy })
    // One run failing (say, deleted meanwhile) does not keep the others from being marked.
    yield* change.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning(`Could not mark flow run ${run.id} late`, cause))
    )
  }
})

export const LateRunsService = registerServices(
  defineService({ name: "late_runs", interval: loopSeconds((s) => s.late_runs), tick: markLateRuns, singleton: true })
).pipe(Layer.provide([LateRunsRepo.Default, Orchestrator.Default]))
