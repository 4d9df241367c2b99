/**
 * The foreman keeps readiness honest: workers that stopped sending heartbeats go OFFLINE, pools left
 * without an ONLINE worker go NOT_READY, and work queues and deployments no worker polled within
 * their timeouts go NOT_READY.
 */
import { Effect, Layer } from "effect"
import { DeploymentsRepo } from "../deployments/repo.ts"
import { now } from "../domain/time.ts"
import { Settings } from "../settings/settings.ts"
import { WorkQueuesRepo } from "../work-pools/queues-repo.ts"
import { WorkPoolsRepo } from "../work-pools/repo.ts"
import { defineService, loopSeconds, registerServices } from "./runner.ts"

export const checkReadiness = Effect.gen(function* () {
  const settings = (yield* Settings).server.services.foreman
  const pools = yield* WorkPoolsRepo
  const queues = yield* WorkQueuesRepo
  const deployments = yield* DeploymentsRepo
  const at = yield* now
  const ago = (seconds: number) => new Date(at.getTime() - seconds * 1000)
  yield* pools.markSilentWorkers(at, {
    multiple: settings.inactivity_heartbeat_multiple,
    fallbackSeconds: settings.fallback_heartbeat_interval_seconds
  })
  yield* deployments.markStale(ago(settings.deployment_last_polled_timeout_seconds), at)
  yield* queues.markStale(ago(settings.work_queue_last_polled_timeout_seconds), at)
})

export const ForemanService = registerServices(
  defineService({ name: "foreman", interval: loopSeconds((s) => s.foreman), tick: checkReadiness, singleton: true })
).pipe(Layer.provide([DeploymentsRepo.Default, WorkPoolsRepo.Default, WorkQueuesRepo.Default]))
