/**
 * Every background service of the server, each registered by its own Layer (next to its work) with
 * the runner. Each reads `enabled` and its interval from `server.services.<name>`. A new service is
 * one more Layer here; its registration provides the area services its iterations use, so only the
 * settings and the database are left to provide.
 */
import { Layer } from "effect"
import { TriggersService } from "../automations/triggers-registration.ts"
import { EventPersisterService } from "../events/persister.ts"
import { TaskRunRecorderService } from "../task-runs/recorder.ts"
import { CancellationCleanupService } from "./cancellation-cleanup.ts"
import { DbVacuumService } from "./db-vacuum.ts"
import { ForemanService } from "./foreman.ts"
import { LateRunsService } from "./late-runs.ts"
import { PauseExpirationsService } from "./pause-expirations.ts"
import { RepossessorService } from "./repossessor.ts"
import { Leadership } from "../database/leadership.ts"
import { BackgroundServices, type BackgroundService, runRegistered } from "./runner.ts"
import { registerInstance } from "./instances.ts"
import { SchedulerService } from "./scheduler.ts"
import { TableUpkeepService } from "./table-upkeep.ts"

/** The registrations, with the BackgroundServices they add themselves to. */
export const BackgroundServicesLive = Layer.mergeAll(
  SchedulerService,
  LateRunsService,
  CancellationCleanupService,
  PauseExpirationsService,
  EventPersisterService,
  TaskRunRecorderService,
  TriggersService,
  ForemanService,
  RepossessorService,
  DbVacuumService,
  TableUpkeepService
).pipe(Layer.provideMerge(BackgroundServices.Default))

/**
 * Runs the registered services `only` picks (all by default), each when its settings enable it. Built
 * in the same build as the handlers, their iterations use the handlers' instances of the area services.
 */
export const runBackgroundServices = (only?: (service: BackgroundService) => boolean) =>
  runRegistered(only).pipe(Layer.provide(BackgroundServicesLive), Layer.provide(Leadership.Default))

/**
 * What a process serving the API runs even without the background services: the event persister's
 * own loops (the events it receives are written within its flush interval, and the outbox of its
 * writes relayed). Never the singletons: such a process takes no part in leadership.
 */
const apiOnly = (service: BackgroundService) => service.name === "event_persister" && service.singleton !== true
export const runApiServices = Layer.merge(runRegistered(apiOnly), registerInstance({ servesApi: true, only: apiOnly })).pipe(
  Layer.provide(BackgroundServicesLive),
  Layer.provide(Leadership.never)
)

/**
 * Every registered service, as a process runs them (runBackgroundServices), with the process
 * registered in the database (services/instances.ts) as one that serves the API or not.
 */
export const runProcessServices = (options: { readonly servesApi: boolean }) =>
  Layer.merge(runRegistered(), registerInstance({ servesApi: options.servesApi, only: () => true })).pipe(
    Layer.provide(BackgroundServicesLive),
    Layer.provide(Leadership.Default)
  )
