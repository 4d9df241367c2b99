import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

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
  .add(HttpApiEndpoint.get("health", "/health").addSuccess(Schema.Boolean))
  .add(HttpApiEndpoint.get("version", "/version").addSuccess(Schema.String))
  .add(HttpApiEndpoint.get("hello", "/hello").addSuccess(Schema.String))
  .add(HttpApiEndpoint.get("ready", "/ready").addSuccess(ReadyMessage).addError(DatabaseNotReadyResponse))
{}
