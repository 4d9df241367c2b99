/**
 * The one service runner: each background service is a fiber in the server's scope that runs its
 * iteration (`tick`) at once and then every `interval`, logs a failed iteration and goes on, and is
 * interrupted when the scope closes. Timing comes from Effect's Clock, so TestClock drives it.
 *
 * A service registers itself: its own Layer (`registerServices`) adds it to the BackgroundServices
 * of the build, and `runRegistered` runs whatever was added.
 */
import { Cause, Duration, Effect, FiberRef, Layer, Option, Schedule } from "effect"
import { unavailability, unavailabilityReason } from "../database/errors.ts"
import { Settings, type SettingsValue } from "../settings/settings.ts"
import { Leadership } from "../database/leadership.ts"
import { Metrics } from "../http/metrics-registry.ts"

export type ServiceName = keyof SettingsValue["server"]["services"]

export interface BackgroundService<R = never> {
  /** Its settings live under `server.services.<name>`; `enabled` there says whether it runs. */
  readonly name: ServiceName
  /** Names one of several loops of a service (e.g. the scheduler's quick loop), in logs and traces. */
  readonly loop?: string
  /** The pause between two iterations, read from its settings. */
  readonly interval: (settings: SettingsValue) => Duration.DurationInput
  /** One iteration. */
  readonly tick: Effect.Effect<void, unknown, R>
  /**
   * Runs in one process at a time among those sharing the database: the leader (leadership.ts).
   * Each iteration first checks that this process still leads.
   */
  readonly singleton?: boolean
  /**
   * Runs in every process, but part of its iteration only where this process leads it (it asks
   * `Leadership.leads(name)`): its lock is asked for with the singletons', at start.
   */
  readonly leadsPart?: boolean
}

export const defineService = <R>(service: BackgroundService<R>): BackgroundService<R> => service

type ServicesSettings = SettingsValue["server"]["services"]

/** The interval a service's `loop_seconds` setting says. */
export const loopSeconds = (pick: (s: ServicesSettings) => { readonly loop_seconds: number }) => (settings: SettingsValue) =>
  Duration.seconds(pick(settings.server.services).loop_seconds)

/** The failure or defect of `cause` that says the database is unavailable, if one does. */
const unavailableIn = (cause: Cause.Cause<unknown>) =>
  Option.fromNullable([...Cause.failures(cause), ...Cause.defects(cause)].find((error) => unavailability(error) !== undefined))

/**
 * Runs `service` forever: a failing or dying iteration is logged and the loop goes on. Also for a
 * process's own loops that are not settings-enabled services (e.g. listening for runs due). An
 * iteration that failed because the database is unavailable is one warning line (no trace): the next
 * iteration tries again, and succeeds once the database is back. With `server.log_retryable_errors`
 * (when the loop runs with the Settings), it is an error with its trace instead.
 */
export const loop = <R>(
  service: Pick<BackgroundService<R>, "loop" | "tick"> & { readonly name: string },
  interval: Duration.DurationInput
) => {
  const label = service.loop === undefined ? service.name : `${service.name} (${service.loop})`
  const logRetryable = Effect.map(Effect.serviceOption(Settings), Option.exists((settings) => settings.server.log_retryable_errors))
  const survive = Effect.catchAllCause((cause: Cause.Cause<unknown>) => {
    if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
    const unavailable = unavailableIn(cause)
    if (Option.isNone(unavailable)) return Effect.logError(`Service ${label}: iteration failed`, cause)
    const line = `Service ${label}: iteration failed, the database is unavailable: ${unavailabilityReason(unavailable.value)}`
    return Effect.flatMap(logRetryable, (each) => (each ? Effect.logError(line, cause) : Effect.logWarning(line)))
  })
  // A span per iteration only when spans are made (tracing on): a loop that waits for each event
  // (interval zero) goes round once per event, and an unexported span still costs its making.
  return Effect.flatMap(FiberRef.get(FiberRef.currentTracerEnabled), (tracing) => {
    const iteration = survive(tracing ? Effect.withSpan(service.tick, `service.${label}`) : service.tick)
    return Duration.isZero(Duration.decode(interval))
      ? Effect.forever(Effect.zipRight(iteration, Effect.yieldNow()))
      : Effect.repeat(iteration, Schedule.spaced(interval))
  }).pipe(Effect.annotateLogs("service", label))
}

/**
 * Forks every enabled service into the Layer's scope; closing the scope (server shutdown)
 * interrupts them all. Each iteration is measured (../http/metrics-registry.ts); a singleton's only when
 * this process leads and it runs.
 */
export const runServices = <R>(services: ReadonlyArray<BackgroundService<R>>): Layer.Layer<never, never, Settings | Leadership | R> =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const settings = yield* Settings
      const leadership = yield* Leadership
      const metrics = yield* Metrics
      const isEnabled = (service: BackgroundService<R>) => settings.server.services[service.name].enabled
      for (const service of services.filter((service) => !isEnabled(service))) yield* Effect.logDebug(`Service ${service.name} is disabled`)
      const enabled = services.filter(isEnabled)
      // The locks of what this process runs, all asked for at once (and taken, where free, before the
      // first iterations): a process running only some singletons leaves the others to another.
      yield* leadership.want([...new Set(enabled.filter((service) => service.singleton || service.leadsPart).map((service) => service.name))])
      for (const service of enabled) {
        const measured = (yield* metrics.iterations(service.name, service.loop))(service.tick)
        const run = service.singleton
          ? { ...service, tick: Effect.flatMap(leadership.leads(service.name), (leads) => (leads ? measured : Effect.void)) }
          : { ...service, tick: measured }
        yield* Effect.forkScoped(loop(run, service.interval(settings)))
        yield* Effect.logDebug(`Service ${service.loop === undefined ? service.name : `${service.name} (${service.loop})`} started`)
      }
    })
  ).pipe(Layer.provide(Metrics.Default))

/** The background services registered in one build of the server, in the order they were added. */
export class BackgroundServices extends Effect.Service<BackgroundServices>()("baton/BackgroundServices", {
  sync: () => {
    const added: Array<BackgroundService> = []
    return {
      add: (service: BackgroundService) => Effect.sync(() => void added.push(service)),
      all: Effect.sync((): ReadonlyArray<BackgroundService> => [...added])
    }
  }
}) {}

/** What the iterations of a service use. */
type ServiceContext<S> = S extends BackgroundService<infer R> ? R : never

/**
 * A Layer that registers `services` (the loops of one service). Their iterations use the services
 * this Layer is built with: the registration provides them (`.pipe(Layer.provide(…))`), and Layers
 * being memoised by reference within one build, those are the instances the handlers use.
 */
export const registerServices = <const Services extends ReadonlyArray<BackgroundService<any>>>(
  ...services: Services
): Layer.Layer<never, never, BackgroundServices | ServiceContext<Services[number]>> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const context = yield* Effect.context<ServiceContext<Services[number]>>()
      const registry = yield* BackgroundServices
      for (const service of services) {
        yield* registry.add({ ...service, tick: Effect.provide(service.tick, context) as Effect.Effect<void, unknown> })
      }
    })
  )

/**
 * Runs the registered services (those `only` picks) as runServices does. The registrations build
 * concurrently, so they are run in the order of their names (a service's loops in their own order).
 */
export const runRegistered = (
  only: (service: BackgroundService) => boolean = () => true
): Layer.Layer<never, never, Settings | Leadership | BackgroundServices> =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.flatMap(BackgroundServices, (registry) => registry.all),
      (all) => runServices(all.filter(only).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)))
    )
  )
