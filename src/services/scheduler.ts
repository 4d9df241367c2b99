/**
 * The scheduler: a main loop that gives every deployment short of future runs its next runs, and a
 * quick loop for deployments changed a moment ago, so a new schedule has runs within seconds.
 */
import { Effect } from "effect"
import { DeploymentScheduler } from "../deployments/scheduler.ts"

export const scheduleDue = Effect.flatMap(DeploymentScheduler, (scheduler) => scheduler.scheduleDue)

export const scheduleRecent = Effect.flatMap(DeploymentScheduler, (scheduler) => scheduler.scheduleRecent)
