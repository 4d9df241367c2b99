/**
 * Each process registers itself in the database (`baton_instance`): its host and pid, whether it
 * serves the API, the services it runs, and those of them it leads, with a heartbeat
 * every HEARTBEAT. `GET /admin/instances` lists those heard from within LIVE_WITHIN. A process that
 * starts next to live ones warns about the settings that do not work across processes. A process
 * that stops removes its row; one killed is forgotten a day after its last heartbeat.
 */
import { Duration, Effect, Layer } from "effect"
import * as os from "node:os"
import { InstancesRepo, type InstanceRow } from "../admin/instances-repo.ts"
import { Leadership } from "../database/leadership.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { Settings } from "../settings/settings.ts"
import { BATON_VERSION } from "../version.ts"
import { type BackgroundService, BackgroundServices, loop } from "./runner.ts"

export const HEARTBEAT = Duration.seconds(10)
export const LIVE_WITHIN = Duration.seconds(30)
const FORGET_AFTER = Duration.days(1)

const describe = (instance: InstanceRow) => `${instance.hostname} pid ${instance.pid}`

/** The warnings a process starting beside `others` gives, for its own settings and theirs. */
export const crossProcessWarnings = (self: InstanceRow, others: ReadonlyArray<InstanceRow>): Array<string> => {
  if (others.length === 0) return []
  const inMemory = [self, ...others].filter((instance) => instance.lease_storage === "memory")
  if (inMemory.length === 0) return []
  return [
    `Concurrency leases are kept in process memory (server.concurrency.lease_storage=memory) by ${
      inMemory.map((instance) => (instance.id === self.id ? "this process" : describe(instance))).join(", ")
    }, while ${others.length} other Baton process(es) use this database (${others.map(describe).join(", ")}): a lease taken through one process cannot be renewed or ended through another. Set server.concurrency.lease_storage=database on every process.`
  ]
}

/**
 * Registers this process for the Layer's life: `servesApi`, and the registered background services
 * `only` picks (those its settings enable).
 */
export const registerInstance = (options: { readonly servesApi: boolean; readonly only: (service: BackgroundService) => boolean }) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const repo = yield* InstancesRepo
      const settings = yield* Settings
      const leadership = yield* Leadership
      const services = (yield* Effect.flatMap(BackgroundServices, (registry) => registry.all))
        .filter((service) => options.only(service) && settings.server.services[service.name].enabled)
      const names = (list: ReadonlyArray<BackgroundService>) => [...new Set(list.map((service) => service.name))].sort()
      // What it runs that a process leads (as the runner asks, which one of the two may do first):
      // registered with what it leads already, the row says so from the start.
      yield* leadership.want(names(services.filter((service) => service.singleton === true || service.leadsPart === true)))
      const started = yield* now
      const self: InstanceRow = {
        id: yield* newId,
        hostname: os.hostname(),
        pid: process.pid,
        version: BATON_VERSION,
        started,
        heartbeat: started,
        serves_api: options.servesApi,
        services: names(services),
        singletons: names(services.filter((service) => service.singleton === true)),
        leads_services: yield* leadership.leading,
        lease_storage: settings.server.concurrency.lease_storage ?? "memory",
        messaging_broker: settings.server.events.messaging_broker
      }
      // Registering is for the operator's eyes: a database that does not take it stops nothing.
      const registered = yield* repo.register(self).pipe(
        Effect.as(true),
        Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("Could not register this process in the database", cause), false))
      )
      if (!registered) return
      yield* Effect.addFinalizer(() => repo.remove(self.id).pipe(Effect.catchAllCause(() => Effect.void)))
      const others = (yield* repo.live(new Date(started.getTime() - Duration.toMillis(LIVE_WITHIN)))).filter((other) => other.id !== self.id)
      for (const warning of crossProcessWarnings(self, others)) yield* Effect.logWarning(warning)

      const beat = Effect.gen(function* () {
        const at = yield* now
        const leading = yield* leadership.leading
        if (!(yield* repo.beat(self.id, at, leading))) yield* repo.register({ ...self, heartbeat: at, leads_services: leading })
        yield* repo.prune(new Date(at.getTime() - Duration.toMillis(FORGET_AFTER)))
      })
      yield* Effect.forkScoped(loop({ name: "instances", loop: "heartbeat", tick: beat }, HEARTBEAT))
      // A change of leadership shows at once, not at the next heartbeat.
      yield* Effect.forkScoped(loop({ name: "instances", loop: "leadership", tick: Effect.zipRight(leadership.changed, beat) }, Duration.zero))
    })
  ).pipe(Layer.provide(InstancesRepo.Default))
