import { apiGroup } from "../http/group.ts"
import { Duration, Effect, Layer } from "effect"
import { now } from "../domain/time.ts"
import { LIVE_WITHIN } from "../services/instances.ts"
import { InstancesRepo } from "./instances-repo.ts"
import { StorageDefaults } from "../blocks/storage-defaults.ts"
import { BatonApi } from "../api.ts"
import { Settings, settingsReport } from "../settings/settings.ts"
import { COMPATIBLE_SERVER_VERSION } from "../version.ts"

export const AdminLive = apiGroup(BatonApi, "admin", (handlers) =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const storage = yield* StorageDefaults
    const instances = yield* InstancesRepo
    // Settings never change while the server runs: build the report once.
    const report = settingsReport(settings)
    return handlers
      .handle("readSettings", () => Effect.succeed(report))
      .handle("readVersion", () => Effect.succeed(COMPATIBLE_SERVER_VERSION))
      .handle("readStorage", () => storage.read)
      .handle("updateStorage", ({ payload }) => storage.set(payload.default_result_storage_block_id))
      .handle("clearStorage", () => storage.clear)
      .handle("readInstances", () =>
        Effect.gen(function* () {
          const at = yield* now
          const live = yield* instances.live(new Date(at.getTime() - Duration.toMillis(LIVE_WITHIN)))
          return live.map((instance) => ({
            id: instance.id,
            hostname: instance.hostname,
            pid: instance.pid,
            version: instance.version,
            started: instance.started,
            last_heartbeat: instance.heartbeat,
            api: instance.serves_api,
            services: instance.services,
            leads: instance.leads_services,
            lease_storage: instance.lease_storage,
            messaging_broker: instance.messaging_broker
          }))
        }))
  })
).pipe(Layer.provide([StorageDefaults.Default, InstancesRepo.Default]))
