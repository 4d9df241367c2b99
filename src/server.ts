/**
 * The server, composed as Layers: Settings → Database (+ migrations) → Api handlers → HTTP server,
 * plus the background services. Another program may take any of these Layers and replace one.
 */
import { type HttpApi, HttpApiBuilder, type HttpApp, HttpMiddleware, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import type { SqlClient } from "@effect/sql"
import type { PgClient } from "@effect/sql-pg"
import { Effect, FiberRef, Layer, LogLevel } from "effect"
import { AdminLive } from "./admin/http.ts"
import { ConcurrencyLimitsLive, ConcurrencyLimitsV2Live } from "./concurrency/http.ts"
import { LeaseStorageLive } from "./concurrency/leases.ts"
import { ConcurrencyLimitsRepo } from "./concurrency/repo.ts"
import { ConcurrencyRules } from "./concurrency/rules.ts"
import { ConcurrencySlots } from "./concurrency/slots.ts"
import { DeploymentsLive } from "./deployments/http.ts"
import { DeploymentsRepo } from "./deployments/repo.ts"
import { DeploymentRuns } from "./deployments/runs.ts"
import { ScheduledRunsRepo } from "./deployments/scheduled-runs-repo.ts"
import { DeploymentScheduler } from "./deployments/scheduler.ts"
import { Deployments } from "./deployments/service.ts"
import { TaskWorkersLive } from "./task-workers/http.ts"
import { WorkPoolsLive } from "./work-pools/http.ts"
import { PollRepo } from "./work-pools/poll-repo.ts"
import { WorkPools } from "./work-pools/pools.ts"
import { WorkQueuesRepo } from "./work-pools/queues-repo.ts"
import { RunsDue } from "./work-pools/runs-due.ts"
import { WorkQueuesLive } from "./work-queues/http.ts"
import { ArtifactsLive } from "./artifacts/http.ts"
import { BlockDocumentsLive } from "./blocks/documents-http.ts"
import { BlockDocumentsRepo } from "./blocks/documents-repo.ts"
import { BlockDocuments } from "./blocks/documents-service.ts"
import { Encryption } from "./blocks/encryption.ts"
import { BlockRegistration } from "./blocks/registration.ts"
import { BlockCapabilitiesLive, BlockSchemasLive } from "./blocks/schemas-http.ts"
import { BlockSchemasRepo } from "./blocks/schemas-repo.ts"
import { BlockSchemas } from "./blocks/schemas-service.ts"
import { StorageDefaults } from "./blocks/storage-defaults.ts"
import { BlockTypesLive } from "./blocks/types-http.ts"
import { BlockTypesRepo } from "./blocks/types-repo.ts"
import { CollectionsLive } from "./collections/http.ts"
import { ConfigurationRepo } from "./configuration/repo.ts"
import { CsrfLive } from "./csrf/http.ts"
import { csrfMiddleware } from "./csrf/middleware.ts"
import { CsrfTokensRepo } from "./csrf/repo.ts"
import { TemplatesLive } from "./templates/http.ts"
import { AutomationChanges } from "./automations/changes.ts"
import { AutomationsLive } from "./automations/http.ts"
import { AutomationActions } from "./automations/actions.ts"
import { TriggeredActionsRepo } from "./automations/actions-repo.ts"
import { BucketsRepo } from "./automations/buckets-repo.ts"
import { AutomationsRepo } from "./automations/repo.ts"
import { Automations } from "./automations/service.ts"
import { TriggersEngine } from "./automations/triggers.ts"
import { FlowRunInputsRepo } from "./flow-runs/inputs-repo.ts"
import { FlowRunResume } from "./flow-runs/resume.ts"
import { FlowRuns } from "./flow-runs/service.ts"
import { Orchestrator } from "./orchestration/orchestrator.ts"
import { EventBus } from "./events/bus.ts"
import { EventsLive } from "./events/http.ts"
import { EventLog } from "./events/log.ts"
import { EventOutboxRepo } from "./events/outbox-repo.ts"
import { EventPersister } from "./events/persister.ts"
import { EventRelay } from "./events/relay.ts"
import { EventsRepo } from "./events/repo.ts"
import { RunResourcesRepo } from "./events/run-resources-repo.ts"
import { Events } from "./events/service.ts"
import { StatusChanges } from "./events/status-changes.ts"
import { StatusResourcesRepo } from "./events/status-resources-repo.ts"
import { EventSocketsLive } from "./events/socket.ts"
import { ArtifactsRepo } from "./artifacts/repo.ts"
import { LogsLive } from "./logs/http.ts"
import { LogsRepo } from "./logs/repo.ts"
import { LogsOutLive } from "./logs/socket.ts"
import { LogStream } from "./logs/stream.ts"
import { TaskRunSubscriptionsLive } from "./task-workers/socket.ts"
import { TaskRunDeliveries } from "./task-workers/deliveries.ts"
import { TaskWorkersRepo } from "./task-workers/repo.ts"
import { SavedSearchesLive } from "./saved-searches/http.ts"
import { SavedSearchesRepo } from "./saved-searches/repo.ts"
import { VariablesLive } from "./variables/http.ts"
import { Hydration } from "./variables/hydration.ts"
import { VariablesRepo } from "./variables/repo.ts"
import { WorkPoolsRepo } from "./work-pools/repo.ts"
import { WorkQueueLookup } from "./work-pools/queue-lookup.ts"
import { FlowRunStatesLive, FlowRunsLive } from "./flow-runs/http.ts"
import { FlowRunMetricsLive } from "./flow-runs/metrics.ts"
import { FlowRunsRepo } from "./flow-runs/repo.ts"
import { FlowsLive } from "./flows/http.ts"
import { FlowsRepo } from "./flows/repo.ts"
import * as Database from "./database/client.ts"
import { MigrateOnStart, type MigrationError } from "./database/migrator.ts"
import { BatonApi } from "./api.ts"
import * as ApiDocs from "./http/docs.ts"
import { serveApiInFront } from "./http/api-path.ts"
import { edge, edgeSteps } from "./http/edge.ts"
import { METRICS_PATH, MetricsRouteLive, requestRecorder } from "./http/metrics.ts"
import { DatabasePoolMetricsLive, Metrics } from "./http/metrics-registry.ts"
import { makeNodeServer, NodeServer } from "./http/node-server.ts"
import { StatementsLive } from "./database/statements.ts"
import { DecodeFastPathLive } from "./domain/decode-fast-path.ts"
import { apiMiddleware } from "./http/middleware.ts"
import { RunStatesRepo } from "./orchestration/repo.ts"
import { Transitions } from "./orchestration/transitions.ts"
import { RootLive } from "./root/http.ts"
import { TaskRunStatesLive, TaskRunsLive } from "./task-runs/http.ts"
import { UiStatic } from "./ui/bundle.ts"
import { TaskRunsRepo } from "./task-runs/repo.ts"
import { TaskRunRecorder } from "./task-runs/recorder.ts"
import { TaskRunRecorderRepo } from "./task-runs/recorder-repo.ts"
import { UiFlowRunsLive, UiFlowsLive, UiSchemasLive, UiTaskRunsLive } from "./ui/http.ts"
import { UiRepo } from "./ui/repo.ts"
import { uiOutside } from "./ui/serve.ts"
import { Leadership } from "./database/leadership.ts"
import { runApiServices, runProcessServices } from "./services/registry.ts"
import { VacuumRepo } from "./services/vacuum-repo.ts"
import * as SettingsModule from "./settings/settings.ts"
import { Settings } from "./settings/settings.ts"
import { TracingLive, tracingEnabled } from "./telemetry/tracing.ts"

export type DatabaseServices = SqlClient.SqlClient | PgClient.PgClient

/**
 * The database the settings choose (PostgreSQL or embedded), migrated when migrate_on_start asks,
 * its pool's use reported to the metrics.
 */
export const DatabaseLive: Layer.Layer<
  DatabaseServices | Database.DatabasePool,
  Database.DatabaseError | MigrationError,
  Settings
> = Layer.merge(MigrateOnStart, DatabasePoolMetricsLive).pipe(
  Layer.provideMerge(Database.layerFromSettings)
)

/**
 * The area services, in one Layer, for programs (and tests) that call them directly: built in the
 * same build as the server, each is the instance the handlers and background services use (Layers
 * are memoised by reference within one build). The server's own composition does not use it: each
 * group and each background service provides the services it uses.
 */
const areas = Layer.mergeAll(
  ArtifactsRepo.Default,
  AutomationActions.Default,
  AutomationChanges.Default,
  Automations.Default,
  AutomationsRepo.Default,
  BlockDocuments.Default,
  BlockDocumentsRepo.Default,
  BlockRegistration.Default,
  BlockSchemas.Default,
  BlockSchemasRepo.Default,
  BlockTypesRepo.Default,
  BucketsRepo.Default,
  ConcurrencyLimitsRepo.Default,
  ConcurrencyRules.Default,
  ConcurrencySlots.Default,
  ConfigurationRepo.Default,
  CsrfTokensRepo.Default,
  DeploymentRuns.Default,
  Deployments.Default,
  DeploymentScheduler.Default,
  DeploymentsRepo.Default,
  Encryption.Default,
  EventBus.Default,
  EventLog.Default,
  EventOutboxRepo.Default,
  EventPersister.Default,
  EventRelay.Default,
  Events.Default,
  EventsRepo.Default,
  FlowRunInputsRepo.Default,
  FlowRunResume.Default,
  FlowRuns.Default,
  FlowRunsRepo.Default,
  FlowsRepo.Default,
  Hydration.Default,
  LeaseStorageLive,
  LogsRepo.Default,
  LogStream.Default,
  Orchestrator.Default,
  PollRepo.Default,
  RunResourcesRepo.Default,
  RunsDue.Default,
  RunStatesRepo.Default,
  SavedSearchesRepo.Default,
  ScheduledRunsRepo.Default,
  StatusChanges.Default,
  StatusResourcesRepo.Default,
  StorageDefaults.Default,
  TaskRunRecorder.Default,
  TaskRunRecorderRepo.Default,
  TaskRunsRepo.Default,
  Transitions.Default,
  TriggeredActionsRepo.Default,
  TaskRunDeliveries.Default,
  TaskWorkersRepo.Default,
  TriggersEngine.Default,
  UiRepo.Default,
  VacuumRepo.Default,
  VariablesRepo.Default,
  WorkPools.Default,
  WorkPoolsRepo.Default,
  WorkQueueLookup.Default,
  WorkQueuesRepo.Default
)

// Typed so that a service needing more than the settings and the database fails here. It leads
// as a full server does (the same instance as the server's, built in one build).
export const AreasLive: Layer.Layer<
  Layer.Layer.Success<typeof areas>,
  Layer.Layer.Error<typeof areas> | Database.DatabaseError,
  DatabaseServices | Settings
> = areas.pipe(Layer.provide(Leadership.Default))

/**
 * What writes the events this process receives and relays the outbox of its writes, and what reads
 * the event log: built before the handlers and the background services (both provide it, one build
 * makes it once), since the in-memory bus hands an event only to the persister subscribed when it
 * is published.
 */
export const EventFlowLive = Layer.mergeAll(
  EventPersister.Default,
  TaskRunRecorder.Default,
  TriggersEngine.Default
)

const groups = Layer.mergeAll(
  RootLive,
  AdminLive,
  FlowsLive,
  FlowRunsLive,
  FlowRunStatesLive,
  TaskRunsLive,
  TaskRunStatesLive,
  DeploymentsLive,
  WorkPoolsLive,
  WorkQueuesLive,
  TaskWorkersLive,
  ConcurrencyLimitsLive,
  ConcurrencyLimitsV2Live,
  VariablesLive,
  SavedSearchesLive,
  LogsLive,
  ArtifactsLive,
  BlockTypesLive,
  BlockSchemasLive,
  BlockDocumentsLive,
  BlockCapabilitiesLive,
  CsrfLive,
  CollectionsLive,
  TemplatesLive,
  EventsLive,
  AutomationsLive,
  UiFlowsLive,
  UiFlowRunsLive,
  UiTaskRunsLive,
  UiSchemasLive
).pipe(Layer.provide(EventFlowLive))

/**
 * The handlers of every area's group, each group providing the services it uses. Typed so that a
 * group needing more than the settings, the database and the process's Leadership fails here.
 */
export const GroupsLive: Layer.Layer<
  Layer.Layer.Success<typeof groups>,
  Layer.Layer.Error<typeof groups>,
  DatabaseServices | Settings | Leadership
> = groups

/**
 * The Api with every group's handlers, the websocket routes beside them, and what the metrics read
 * of the areas.
 */
export const HandlersLive = Layer.mergeAll(
  HttpApiBuilder.api(BatonApi),
  LogsOutLive,
  EventSocketsLive,
  TaskRunSubscriptionsLive,
  FlowRunMetricsLive
).pipe(Layer.provide(GroupsLive))

const DOCS = { openApiPath: "/openapi.json", docsPath: "/docs" } as const

/** Whether DEBUG lines are logged where the server is built (requests are logged at DEBUG). */
const logsAtDebug = Effect.map(FiberRef.get(FiberRef.currentMinimumLogLevel), (level) => LogLevel.lessThanEqual(level, LogLevel.Debug))

/**
 * Serves `api` (with the handlers `handlers` provide) under `server.api.base_path`, with its
 * OpenAPI document and docs page, its metrics when they are on, and the UI beside it when the
 * settings name one.
 */
export const serveApi = <E, R>(api: HttpApi.HttpApi.Any, handlers: Layer.Layer<HttpApi.Api, E, R>) =>
  Layer.unwrapEffect(
    Effect.map(Effect.all([Settings, UiStatic, Metrics, tracingEnabled, logsAtDebug]), ([settings, ui, metrics, tracing, logsRequests]) => {
      const record = requestRecorder(metrics, settings.server.api.base_path, api, [DOCS.openApiPath, DOCS.docsPath, METRICS_PATH])
      const steps = edgeSteps(settings, uiOutside(settings, ui.bundles), record, logsRequests)
      // The Api's endpoints are served by Baton's request path (http/api-path.ts), unless requests are
      // logged or traced; the rest by the platform's router, as HttpApiBuilder.serve would.
      const served = Layer.unwrapEffect(
        Effect.gen(function* () {
          const app = yield* HttpApiBuilder.httpApp
          if (!tracing && !logsRequests) yield* serveApiInFront(api, steps)
          // As HttpApiBuilder.serve serves it (the router's services are provided per request).
          return HttpServer.serve(app as HttpApp.Default, edge(steps))
        })
      ).pipe(Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer]))
      return served.pipe(
        // A tracer span per request costs throughput: made only when spans are exported.
        HttpMiddleware.withTracerDisabledWhen(() => !tracing),
        Layer.provide(apiMiddleware(api)),
        Layer.provide(csrfMiddleware),
        Layer.provide(ApiDocs.layer(DOCS)),
        Layer.provide(MetricsRouteLive),
        Layer.provide(handlers),
        // Built with it, every request's statements are checked (and echoed).
        Layer.provide(StatementsLive)
      )
    })
  ).pipe(Layer.provide(UiStatic.Default), Layer.provide(Metrics.Default))

export const ApiLive = serveApi(BatonApi, HandlersLive)

/** A Node HTTP server on `server.api.host` and `server.api.port` (0 picks a free port). */
export const HttpServerLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const settings = yield* Settings
    // Requests are logged at DEBUG: whether that level is on is the logger's, set where the server runs.
    const logsRequests = yield* logsAtDebug
    const server = makeNodeServer(settings, { logsRequests })
    return Layer.merge(
      NodeHttpServer.layer(() => server, { host: settings.server.api.host, port: settings.server.api.port }),
      Layer.succeed(NodeServer, server)
    )
  })
)

/** The system block types and schemas, registered before the API serves when the settings ask. */
export const BlocksOnStartLive = Layer.effectDiscard(
  Effect.flatMap(BlockRegistration, (registration) => registration.registerOnStart())
).pipe(Layer.provide(BlockRegistration.Default))

const processServices = (servesApi: boolean) =>
  runProcessServices({ servesApi }).pipe(Layer.provide(EventFlowLive), Layer.provide(StatementsLive), Layer.provide(Leadership.Default))
const services = processServices(true)
const apiServices = runApiServices.pipe(Layer.provide(EventFlowLive), Layer.provide(StatementsLive), Layer.provide(Leadership.never))

/**
 * Every background service registered (src/services/registry.ts), each started when its settings
 * enable it. Typed so that a registration needing more than the settings and the database fails here.
 */
export const ServicesLive: Layer.Layer<never, Layer.Layer.Error<typeof services>, DatabaseServices | Settings> = services.pipe(
  Layer.provide(Leadership.Default)
)

/**
 * The API server without its Settings and Database, for programs (and tests) that bring their own;
 * with the background services unless `services` is false. Its output is the HttpServer, whose
 * address says where it listens.
 */
export const apiServerWith = (options: { readonly services?: boolean } = {}) => {
  // Start-up work finishes before the port opens: a request accepted earlier would wait for a
  // handler that is not attached yet.
  const http = ApiLive.pipe(
    Layer.provideMerge(HttpServerLive.pipe(Layer.provide(BlocksOnStartLive), Layer.provideMerge(UiStatic.Default)))
  )
  // Spans are made only when they are exported (telemetry/tracing.ts): otherwise every span (each
  // SQL statement, each Effect.fn call) would still be made, timed and attributed on every request.
  // Without the services, the process still writes the events it receives (runApiServices), and
  // takes no part in leadership: what it builds that asks whether it leads hears no.
  const server = options.services === false
    ? Layer.merge(http, apiServices).pipe(Layer.provide(Leadership.never))
    : Layer.merge(http, ServicesLive).pipe(Layer.provide(Leadership.Default))
  // Installed before anything in the server makes a decoder (domain/decode-fast-path.ts).
  return server.pipe(Layer.provide(TracingLive), Layer.provide(DecodeFastPathLive))
}

/** The whole API server: settings from the environment (and `overrides`), the database they choose. */
export const apiServer = (
  options: { readonly services?: boolean; readonly overrides?: SettingsModule.SettingsOverrides } = {}
) =>
  apiServerWith(options).pipe(
    // The UI is found (which may ask Python, taking a few hundred ms) while the database starts: the
    // server's own UiStatic is this instance (Layers are memoised within one build).
    Layer.provideMerge(Layer.merge(DatabaseLive, UiStatic.Default)),
    Layer.provideMerge(SettingsModule.layer(options.overrides))
  )

/** The background services alone (no HTTP), for running them in their own process. */
export const servicesServer = (options: { readonly overrides?: SettingsModule.SettingsOverrides } = {}) =>
  processServices(false).pipe(Layer.provide(TracingLive), Layer.provideMerge(DatabaseLive), Layer.provideMerge(SettingsModule.layer(options.overrides)))
