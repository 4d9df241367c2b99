import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { CleansTextAnnotationId } from "../http/input-checks.ts"
import { Log, LogCreate, ReadLogsBody } from "./schemas.ts"

/** A batch of logs; the repository drops NUL characters from names and messages. */
const LogBatch = Schema.Array(LogCreate).annotations({ [CleansTextAnnotationId]: true })

export class LogsApi extends HttpApiGroup.make("logs")
  .add(HttpApiEndpoint.post("create", "/").setPayload(LogBatch).addSuccess(Schema.Null, { status: 201 }))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadLogsBody).addSuccess(Schema.Array(Log)))
  .prefix("/logs")
{}
