/** Pause expirations: a run paused past its `pause_timeout` (nobody resumed it) fails. */
import { Effect, Layer } from "effect"
import { emptyStateDetails } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { Orchestrator } from "../orchestration/orchestrator.ts"
import { PauseExpirationsRepo } from "./pause-expirations-repo.ts"
import { defineService, loopSeconds, registerServices } from "./runner.ts"

const BATCH = 200

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
    yield* orchestrator.setFlowRunState(id, failed, { force: true }).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning(`Could not fail expired pause of flow run ${id}`, cause))
    )
  }
})

export const PauseExpirationsService = registerServices(
  defineService({ name: "pause_expirations", interval: loopSeconds((s) => s.pause_expirations), tick: failExpiredPauses })
).pipe(Layer.provide([PauseExpirationsRepo.Default, Orchestrator.Default]))
