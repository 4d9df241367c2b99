/**
 * The foreman keeps readiness honest: a deployment no worker has polled within
 * `deployment_last_polled_timeout_seconds` (nor its work queue) goes back to NOT_READY.
 */
import { Effect } from "effect"
import { DeploymentsRepo } from "../deployments/repo.ts"
import { now } from "../domain/time.ts"
import { Settings } from "../settings/settings.ts"

export const markStaleDeployments = Effect.gen(function* () {
  const settings = yield* Settings
  const deployments = yield* DeploymentsRepo
  const at = yield* now
  const timeout = settings.server.services.foreman.deployment_last_polled_timeout_seconds
  yield* deployments.markStale(new Date(at.getTime() - timeout * 1000))
})
