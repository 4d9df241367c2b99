import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { StorageBlockDocumentNotFoundResponse } from "../blocks/errors.ts"
import { ServerDefaultResultStorage, ServerDefaultResultStorageUpdate } from "../blocks/storage-defaults.ts"

/** The settings report: the whole settings tree in JSON form, secrets obfuscated. */
export const SettingsReport = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  identifier: "Settings"
})

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
  .prefix("/admin")
{}
