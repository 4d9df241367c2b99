import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { StorageDefaults } from "../blocks/storage-defaults.ts"
import { BatonApi } from "../api.ts"
import { Settings, settingsReport } from "../settings/settings.ts"
import { COMPATIBLE_SERVER_VERSION } from "../version.ts"

export const AdminLive = HttpApiBuilder.group(BatonApi, "admin", (handlers) =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const storage = yield* StorageDefaults
    // Settings never change while the server runs: build the report once.
    const report = settingsReport(settings)
    return handlers
      .handle("readSettings", () => Effect.succeed(report))
      .handle("readVersion", () => Effect.succeed(COMPATIBLE_SERVER_VERSION))
      .handle("readStorage", () => storage.read)
      .handle("updateStorage", ({ payload }) => storage.set(payload.default_result_storage_block_id))
      .handle("clearStorage", () => storage.clear)
  })
).pipe(Layer.provide(StorageDefaults.Default))
