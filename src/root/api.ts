import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { Unversioned } from "../http/api-version.ts"

export const ReadyMessage = Schema.Struct({ message: Schema.String })

/** /ready answers 503 with `{"message": …}` (not `detail`) while the database cannot be reached. */
export class DatabaseNotReady extends Schema.TaggedError<DatabaseNotReady>()("DatabaseNotReady", {
  message: Schema.String
}) {}

export const DatabaseNotReadyResponse = Schema.transform(ReadyMessage, Schema.typeSchema(DatabaseNotReady), {
  strict: false,
  decode: (body) => new DatabaseNotReady({ message: body.message }),
  encode: (error) => ({ message: error.message })
}).annotations(HttpApiSchema.annotations({ status: 503, identifier: "DatabaseNotReady" }))

export class RootApi extends HttpApiGroup.make("root")
  // The probes answer whatever version the client names, as the reference's do.
  .add(HttpApiEndpoint.get("health", "/health").addSuccess(Schema.Boolean).annotate(Unversioned, true))
  .add(HttpApiEndpoint.get("version", "/version").addSuccess(Schema.String).annotate(Unversioned, true))
  .add(HttpApiEndpoint.get("hello", "/hello").addSuccess(Schema.String))
  .add(HttpApiEndpoint.get("ready", "/ready").addSuccess(ReadyMessage).addError(DatabaseNotReadyResponse))
{}
