/**
 * The scheduler: a main loop that gives every deployment short of future runs its next runs, and a
 * quick loop for deployments changed a moment ago, so a new schedule has runs within seconds.
 */
import { Duration, Effect, Layer } from "effect"
import { DeploymentScheduler } from "../deployments/scheduler.ts"
import { defineService, loopSeconds, registerServices } from "./runner.ts"

export const scheduleDue = Effect.flatMap(DeploymentScheduler, (scheduler) => scheduler.scheduleDue)

export const scheduleRecent = Effect.flatMap(DeploymentScheduler, (scheduler) => scheduler.scheduleRecent)

export const SchedulerService = registerServices(
  defineService({ name: "scheduler", interval: loopSeconds((s) => s.scheduler), tick: scheduleDue, singleton: true }),
  defineService({
    name: "scheduler",
    loop: "recent deployments",
    interval: (settings) => Duration.seconds(settings.server.services.scheduler.recent_deployments_loop_seconds),
    tick: scheduleRecent,
    singleton: true
  })
).pipe(Layer.provide(DeploymentScheduler.Default))
