import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"

/** The settings report: the whole settings tree in JSON form, secrets obfuscated. */
export const SettingsReport = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  identifier: "Settings"
})

export class AdminApi extends HttpApiGroup.make("admin")
  .add(HttpApiEndpoint.get("readSettings", "/settings").addSuccess(SettingsReport))
  .add(HttpApiEndpoint.get("readVersion", "/version").addSuccess(Schema.String))
  .prefix("/admin")
{}
