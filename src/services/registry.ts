/**
 * Every background service of the server, registered with the runner. Each reads `enabled` and its
 * interval from `server.services.<name>`; an iteration's work lives in the service's own module.
 */
import { Duration, Effect } from "effect"
import type { ConcurrencySlots } from "../concurrency/service.ts"
import type { DeploymentsRepo } from "../deployments/repo.ts"
import type { DeploymentScheduler } from "../deployments/scheduler.ts"
import type { Settings, SettingsValue } from "../settings/settings.ts"
import type { FlowRunsRepo } from "../flow-runs/repo.ts"
import type { TaskRunsRepo } from "../task-runs/repo.ts"
import type { WorkQueuesRepo } from "../work-pools/queues-repo.ts"
import type { WorkPoolsRepo } from "../work-pools/repo.ts"
import { EventPersister } from "../events/persister.ts"
import { AutomationActions } from "../automations/actions.ts"
import { TriggersEngine } from "../automations/triggers.ts"
import { TaskRunRecorder } from "../task-runs/recorder.ts"
import { cleanUpCancellations } from "./cancellation-cleanup.ts"
import { checkReadiness } from "./foreman.ts"
import { vacuum } from "./db-vacuum.ts"
import type { VacuumRepo } from "./vacuum-repo.ts"
import type { EventsRepo } from "../events/repo.ts"
import { markLateRuns } from "./late-runs.ts"
import { failExpiredPauses } from "./pause-expirations.ts"
import { repossessExpiredLeases } from "./repossessor.ts"
import { type BackgroundService, defineService } from "./runner.ts"
import { scheduleDue, scheduleRecent } from "./scheduler.ts"

type Services = SettingsValue["server"]["services"]

const loopSeconds = (pick: (s: Services) => { readonly loop_seconds: number }) => (settings: SettingsValue) =>
  Duration.seconds(pick(settings.server.services).loop_seconds)

/** What the services' iterations use: the area services and repositories, and the settings. */
export type ServiceRequirements =
  | DeploymentScheduler
  | DeploymentsRepo
  | FlowRunsRepo
  | TaskRunsRepo
  | WorkPoolsRepo
  | WorkQueuesRepo
  | ConcurrencySlots
  | EventPersister
  | TriggersEngine
  | TaskRunRecorder
  | VacuumRepo
  | EventsRepo
  | AutomationActions
  | Settings

export const services: ReadonlyArray<BackgroundService<ServiceRequirements>> = [
  defineService({
    name: "scheduler",
    interval: loopSeconds((s) => s.scheduler),
    tick: scheduleDue
  }),
  defineService({
    name: "scheduler",
    loop: "recent deployments",
    interval: (settings) => Duration.seconds(settings.server.services.scheduler.recent_deployments_loop_seconds),
    tick: scheduleRecent
  }),
  defineService({
    name: "late_runs",
    interval: loopSeconds((s) => s.late_runs),
    tick: markLateRuns
  }),
  defineService({
    name: "cancellation_cleanup",
    interval: loopSeconds((s) => s.cancellation_cleanup),
    tick: cleanUpCancellations
  }),
  defineService({
    name: "pause_expirations",
    interval: loopSeconds((s) => s.pause_expirations),
    tick: failExpiredPauses
  }),
  defineService({
    name: "event_persister",
    // An iteration itself waits (up to flush_interval) for events to write.
    interval: () => Duration.zero,
    tick: Effect.flatMap(EventPersister, (persister) => persister.tick)
  }),
  defineService({
    name: "task_run_recorder",
    // An iteration itself waits (up to flush_interval) for task run events to record.
    interval: () => Duration.zero,
    tick: Effect.flatMap(TaskRunRecorder, (recorder) => recorder.tick)
  }),
  defineService({
    name: "triggers",
    // An iteration waits for events and evaluates them.
    interval: () => Duration.zero,
    tick: Effect.flatMap(TriggersEngine, (engine) => engine.reactiveTick)
  }),
  defineService({
    name: "triggers",
    loop: "proactive",
    // Proactive triggers, reloading changed automations and sweeping closed buckets, at this granularity.
    interval: (s) => s.server.events.proactive_granularity,
    tick: Effect.flatMap(TriggersEngine, (engine) => engine.periodicTick)
  }),
  defineService({
    name: "triggers",
    loop: "automation changes",
    // Listens until the connection is lost, then listens again after the reconnect interval.
    interval: (s) => Duration.seconds(s.server.services.triggers.pg_notify_reconnect_interval_seconds),
    tick: Effect.flatMap(TriggersEngine, (engine) => engine.listenForChanges)
  }),
  defineService({
    name: "triggers",
    loop: "actions",
    // An iteration waits for triggered actions and performs them.
    interval: () => Duration.zero,
    tick: Effect.flatMap(AutomationActions, (actions) => actions.tick)
  }),
  defineService({
    name: "foreman",
    interval: loopSeconds((s) => s.foreman),
    tick: checkReadiness
  }),
  defineService({
    name: "repossessor",
    interval: loopSeconds((s) => s.repossessor),
    tick: repossessExpiredLeases
  }),
  defineService({
    name: "db_vacuum",
    interval: loopSeconds((s) => s.db_vacuum),
    tick: vacuum
  })
]
