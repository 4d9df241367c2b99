import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { StorageBlockDocumentNotFoundResponse } from "../blocks/errors.ts"
import { ServerDefaultResultStorage, ServerDefaultResultStorageUpdate } from "../blocks/storage-defaults.ts"

/** The settings report: the whole settings tree in JSON form, secrets obfuscated. */
export const SettingsReport = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  identifier: "Settings"
})

/** A process using the database (a Baton extension): what it serves and runs, and what it leads. */
export const Instance = Schema.Struct({
  id: Schema.String,
  hostname: Schema.String,
  pid: Schema.Number,
  version: Schema.String,
  started: Schema.Date,
  last_heartbeat: Schema.Date,
  api: Schema.Boolean,
  services: Schema.Array(Schema.String),
  leads: Schema.Array(Schema.String),
  lease_storage: Schema.String,
  messaging_broker: Schema.String
}).annotations({ identifier: "Instance" })

export class AdminApi extends HttpApiGroup.make("admin")
  .add(HttpApiEndpoint.get("readSettings", "/settings").addSuccess(SettingsReport))
  .add(HttpApiEndpoint.get("readVersion", "/version").addSuccess(Schema.String))
  .add(HttpApiEndpoint.get("readStorage", "/storage").addSuccess(ServerDefaultResultStorage))
  .add(
    HttpApiEndpoint.put("updateStorage", "/storage")
      .setPayload(ServerDefaultResultStorageUpdate)
      .addSuccess(ServerDefaultResultStorage)
      .addError(StorageBlockDocumentNotFoundResponse)
  )
  .add(HttpApiEndpoint.del("clearStorage", "/storage").addSuccess(Schema.Void))
  .add(HttpApiEndpoint.get("readInstances", "/instances").addSuccess(Schema.Array(Instance)))
  .prefix("/admin")
{}
