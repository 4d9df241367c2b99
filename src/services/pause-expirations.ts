/** Pause expirations: a run paused past its `pause_timeout` (nobody resumed it) fails. */
import { Effect, Layer } from "effect"
import { emptyStateDetails } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { onlyWhile } from "../orchestration/engine.ts"
import { minimalFlowPolicy } from "../orchestration/flow-policy.ts"
import { Orchestrator } from "../orchestration/orchestrator.ts"
import { PauseExpirationsRepo } from "./pause-expirations-repo.ts"
import { defineService, loopSeconds, registerServices } from "./runner.ts"

const BATCH = 200

/** Fails the run only while it is still paused past its timeout: never a second Failed state. */
const expirePausePolicy = [
  onlyWhile("PauseStillExpired", (initial, now) => {
    const timeout = initial?.state_details.pause_timeout ?? null
    return initial?.type === "PAUSED" && timeout !== null && timeout < now
  }),
  ...minimalFlowPolicy
]

/** One pass. */
export const failExpiredPauses = Effect.gen(function* () {
  const runs = yield* PauseExpirationsRepo
  const orchestrator = yield* Orchestrator
  const expired = yield* runs.expiredPauses(yield* now, BATCH)
  for (const id of expired) {
    const failed = {
      type: "FAILED" as const,
      name: null,
      message: "The flow was paused and never resumed.",
      data: null,
      state_details: emptyStateDetails
    }
    yield* orchestrator.setFlowRunState(id, failed, { rules: expirePausePolicy }).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning(`Could not fail expired pause of flow run ${id}`, cause))
    )
  }
})

export const PauseExpirationsService = registerServices(
  defineService({ name: "pause_expirations", interval: loopSeconds((s) => s.pause_expirations), tick: failExpiredPauses, singleton: true })
).pipe(Layer.provide([PauseExpirationsRepo.Default, Orchestrator.Default]))
