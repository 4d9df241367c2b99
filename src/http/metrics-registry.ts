/**
 * The metrics the server reports, in one registry per server (prom-client's, never its global one),
 * served in the Prometheus text format at `{base}/metrics` (http/metrics.ts) when
 * server.metrics_enabled is on. Every series is declared here, and docs/metrics.md lists them:
 * the parts of the server report through the methods of `Metrics` (the edge its requests, the
 * runner its services' iterations, the persister its events), and what is read rather than counted
 * (the pool, the persister's backlog, flow runs by state) is read at each scrape from the sources
 * they register for their lifetime.
 *
 * With the setting off every method is a no-op, nothing is registered and prom-client is never
 * loaded.
 */
import { Cause, Clock, Duration, Effect, Exit, Layer, type Scope } from "effect"
import type * as Prom from "prom-client"
import { DatabasePool } from "../database/client.ts"
import { Settings } from "../settings/settings.ts"
import { BATON_VERSION } from "../version.ts"

/** The `route` of a request below the base path that no route takes. */
export const UNMATCHED_ROUTE = "unmatched"
/** The `route` of a request outside the base path (the UI, /ui-settings). */
export const OUTSIDE_ROUTE = "outside"

/** Flow-run state types counted by `baton_flow_runs`: those a run is in while it is not over. */
export const ACTIVE_STATE_TYPES = ["SCHEDULED", "PENDING", "RUNNING", "PAUSED", "CANCELLING"] as const

/**
 * How long a count of flow runs by state serves scrapes: however many scrape, the database counts
 * at most once in this time (per process).
 */
export const FLOW_RUNS_TTL = Duration.seconds(15)

/** How long a scrape waits for a source (the count of flow runs) before it answers without it. */
const SOURCE_TIMEOUT = Duration.seconds(3)

/** Seconds; from a millisecond answer to a long poll. */
const HTTP_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
/** Seconds; the persister's iteration waits up to its flush interval, the scheduler's may take minutes. */
const ITERATION_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

/** Methods are a label value; anything else a client sends is one value, "other". */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/** The text a scrape answers with. */
export interface Exposition {
  readonly contentType: string
  readonly body: string
}

/** What the server reports into. Every method is cheap, and free when metrics are off. */
export interface MetricsShape {
  readonly enabled: boolean
  /** Every series now, after reading the registered sources. */
  readonly render: Effect.Effect<Exposition>
  /** One answered request: `route` is its route template (or UNMATCHED_ROUTE, OUTSIDE_ROUTE). */
  readonly httpRequest: (method: string, route: string, status: number, seconds: number) => void
  /**
   * The instrument for one loop of a background service: wraps its iteration so that its
   * duration, its failure or its success is recorded.
   */
  readonly iterations: (
    service: string,
    loop: string | undefined
  ) => Effect.Effect<<A, E, R>(tick: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>>
  /** Events clients sent that were accepted. */
  readonly eventsReceived: (count: number) => Effect.Effect<void>
  /** Received events the persister wrote into the event log (those not stored before). */
  readonly eventsPersisted: (count: number) => Effect.Effect<void>
  /** Received events dropped: the persister could not write them, or its backlog (memory broker) overflowed. */
  readonly eventsDropped: (count: number) => Effect.Effect<void>
  /** Reads the persister's backlog from `size` at each scrape, for the scope's life. */
  readonly eventBacklog: (size: Effect.Effect<number>) => Effect.Effect<void, never, Scope.Scope>
  /** Counts a websocket of `path` as open for the scope's life. */
  readonly websocketOpen: (path: string) => Effect.Effect<void, never, Scope.Scope>
  /**
   * Reads the flow runs by state type from `counts` for the scope's life: at a scrape, when the
   * last count is older than FLOW_RUNS_TTL.
   */
  readonly flowRuns: (counts: Effect.Effect<ReadonlyMap<string, number>, unknown>) => Effect.Effect<void, never, Scope.Scope>
  /** Reads the connection pool's use at each scrape, for the scope's life. */
  readonly databasePool: (pool: DatabasePool["Type"]) => Effect.Effect<void, never, Scope.Scope>
}

const identity = <A, E, R>(tick: Effect.Effect<A, E, R>) => tick
const noSource = () => Effect.void

/** Metrics off: nothing is recorded, nothing is read. */
export const disabledMetrics: MetricsShape = {
  enabled: false,
  render: Effect.succeed({ contentType: "text/plain; charset=utf-8", body: "" }),
  httpRequest: () => {},
  iterations: () => Effect.succeed(identity),
  eventsReceived: () => Effect.void,
  eventsPersisted: () => Effect.void,
  eventsDropped: () => Effect.void,
  eventBacklog: noSource,
  websocketOpen: noSource,
  flowRuns: noSource,
  databasePool: noSource
}

type Labels = Record<string, string>

/** The metrics of one server, on a registry of its own. */
const makeEnabled = (prom: typeof Prom): Effect.Effect<MetricsShape, never, Scope.Scope> =>
  Effect.gen(function* () {
    const register = yield* Effect.acquireRelease(Effect.sync(() => new prom.Registry()), (registry) => Effect.sync(() => registry.clear()))
    const registers = [register]
    prom.collectDefaultMetrics({ register })

    new prom.Gauge({ name: "baton_info", help: "Always 1; its label says which Baton this is.", labelNames: ["version"], registers })
      .set({ version: BATON_VERSION }, 1)

    const httpDuration = new prom.Histogram({
      name: "baton_http_request_duration_seconds",
      help: "HTTP requests answered, by method, route template and status, and how long each took (its _count counts requests).",
      labelNames: ["method", "route", "status"],
      buckets: HTTP_BUCKETS,
      registers
    })
    const iterationDuration = new prom.Histogram({
      name: "baton_service_iteration_duration_seconds",
      help: "Iterations of each background service loop that ended (succeeded or failed), and how long each took.",
      labelNames: ["service", "loop"],
      buckets: ITERATION_BUCKETS,
      registers
    })
    const iterationFailures = new prom.Counter({
      name: "baton_service_iteration_failures_total",
      help: "Iterations of each background service loop that failed.",
      labelNames: ["service", "loop"],
      registers
    })
    const iterationSuccess = new prom.Gauge({
      name: "baton_service_last_success_timestamp_seconds",
      help: "When an iteration of each background service loop last succeeded (Unix time).",
      labelNames: ["service", "loop"],
      registers
    })
    const eventsReceived = new prom.Counter({
      name: "baton_events_received_total",
      help: "Events clients sent (POST /events, the /events/in websocket) that were accepted.",
      registers
    })
    const eventsPersisted = new prom.Counter({
      name: "baton_events_persisted_total",
      help: "Received events the event persister wrote into the event log.",
      registers
    })
    const eventsDropped = new prom.Counter({
      name: "baton_events_dropped_total",
      help: "Received events dropped: the event persister could not write them, or its backlog was full and it took none for 5 s.",
      registers
    })
    const eventBacklog = new prom.Gauge({
      name: "baton_event_persister_backlog",
      help: "Received events waiting for this process's event persister.",
      registers
    })
    const websockets = new prom.Gauge({
      name: "baton_websockets_open",
      help: "Websockets open (handshake done), by path.",
      labelNames: ["path"],
      registers
    })
    const flowRuns = new prom.Gauge({
      name: "baton_flow_runs",
      help: "Flow runs in each state type that is not final, as counted at most 15 seconds ago.",
      labelNames: ["state_type"],
      registers
    })
    const poolConnections = new prom.Gauge({
      name: "baton_database_pool_connections",
      help: "Connections of the database pool, in use or idle.",
      labelNames: ["state"],
      registers
    })
    const poolWaiting = new prom.Gauge({
      name: "baton_database_pool_waiting",
      help: "Statements waiting for a connection of the database pool.",
      registers
    })
    const poolMax = new prom.Gauge({
      name: "baton_database_pool_max",
      help: "The most connections the database pool opens.",
      registers
    })

    // The label objects of each request's series, made once: a request then allocates none.
    const httpLabels = new Map<string, Map<string, Map<number, Labels>>>()
    const httpLabelsOf = (method: string, route: string, status: number): Labels => {
      const m = METHODS.has(method) ? method : "other"
      let byMethod = httpLabels.get(route)
      if (byMethod === undefined) httpLabels.set(route, byMethod = new Map())
      let byStatus = byMethod.get(m)
      if (byStatus === undefined) byMethod.set(m, byStatus = new Map())
      let labels = byStatus.get(status)
      if (labels === undefined) byStatus.set(status, labels = { method: m, route, status: String(status) })
      return labels
    }

    // What a scrape reads first. A source that fails, or does not answer within SOURCE_TIMEOUT (the
    // database away), leaves its series out of that scrape (unknown, not stale) and is logged: the
    // rest of the scrape is answered in time, when it matters most.
    const sources = new Set<Effect.Effect<void>>()
    const source = (read: Effect.Effect<void, unknown>, clear: () => void) => {
      const guarded = read.pipe(
        Effect.timeoutFail({ duration: SOURCE_TIMEOUT, onTimeout: () => `no answer within ${Duration.format(SOURCE_TIMEOUT)}` }),
        Effect.catchAllCause((cause) => Effect.zipRight(Effect.sync(clear), Effect.logWarning("Could not read a metric", cause)))
      )
      return Effect.asVoid(Effect.acquireRelease(
        Effect.sync(() => sources.add(guarded)),
        () => Effect.sync(() => {
          sources.delete(guarded)
          clear()
        })
      ))
    }

    const render = Effect.zipRight(
      Effect.forEach(sources, (read) => read, { concurrency: "unbounded", discard: true }),
      Effect.promise(() => register.metrics())
    ).pipe(Effect.map((body): Exposition => ({ contentType: register.contentType, body })))

    const iterations = (service: string, loop: string | undefined) =>
      Effect.sync(() => {
        const labels = { service, loop: loop ?? "main" }
        // The series exist from the start: an alert on failures sees 0 before the first one.
        iterationFailures.inc(labels, 0)
        return <A, E, R>(tick: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
          Effect.flatMap(Clock.currentTimeMillis, (start) =>
            Effect.onExit(tick, (exit) => {
              // Stopped (the server shutting down): neither a success nor a failure.
              if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return Effect.void
              return Effect.map(Clock.currentTimeMillis, (end) => {
                iterationDuration.observe(labels, (end - start) / 1000)
                if (Exit.isSuccess(exit)) iterationSuccess.set(labels, end / 1000)
                else iterationFailures.inc(labels)
              })
            }))
      })

    const metrics: MetricsShape = {
      enabled: true,
      render,
      httpRequest: (method, route, status, seconds) => httpDuration.observe(httpLabelsOf(method, route, status), seconds),
      iterations,
      eventsReceived: (count) => Effect.sync(() => eventsReceived.inc(count)),
      eventsPersisted: (count) => Effect.sync(() => eventsPersisted.inc(count)),
      eventsDropped: (count) => Effect.sync(() => eventsDropped.inc(count)),
      eventBacklog: (size) => source(Effect.map(size, (n) => eventBacklog.set(n)), () => eventBacklog.reset()),
      websocketOpen: (path) =>
        Effect.asVoid(Effect.acquireRelease(Effect.sync(() => websockets.inc({ path })), () => Effect.sync(() => websockets.dec({ path })))),
      flowRuns: (counts) =>
        Effect.flatMap(Effect.cachedWithTTL(counts, FLOW_RUNS_TTL), (cached) =>
          source(
            Effect.map(cached, (byType) => {
              for (const type of ACTIVE_STATE_TYPES) flowRuns.set({ state_type: type }, byType.get(type) ?? 0)
            }),
            () => flowRuns.reset()
          )),
      databasePool: (pool) =>
        source(
          Effect.sync(() => {
            const { idleCount, totalCount, waitingCount } = pool.use
            poolConnections.set({ state: "in_use" }, totalCount - idleCount)
            poolConnections.set({ state: "idle" }, idleCount)
            poolWaiting.set(waitingCount)
            poolMax.set(pool.max)
          }),
          () => {
            poolConnections.reset()
            poolWaiting.reset()
            poolMax.reset()
          }
        )
    }
    return metrics
  })

/**
 * The server's metrics, built once per server (every part that reports provides `Metrics.Default`,
 * and Layers are memoised within a build). prom-client is loaded only when metrics are on.
 */
export class Metrics extends Effect.Service<Metrics>()("baton/Metrics", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    if (!settings.server.metrics_enabled) return disabledMetrics
    const prom = yield* Effect.promise(() => import("prom-client"))
    return yield* makeEnabled(prom)
  })
}) {}

/** Reports the use of the database pool the Database Layers made (database/client.ts). */
export const DatabasePoolMetricsLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const metrics = yield* Metrics
    yield* metrics.databasePool(yield* DatabasePool)
  })
).pipe(Layer.provide(Metrics.Default))
