import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Log, LogCreate, ReadLogsBody } from "./schemas.ts"

export class LogsApi extends HttpApiGroup.make("logs")
  .add(HttpApiEndpoint.post("create", "/").setPayload(Schema.Array(LogCreate)).addSuccess(Schema.Null, { status: 201 }))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadLogsBody).addSuccess(Schema.Array(Log)))
  .prefix("/logs")
{}
