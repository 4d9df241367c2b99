import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"

export class CollectionsApi extends HttpApiGroup.make("collections")
  .add(
    HttpApiEndpoint.get("readView", "/collections/views/:view")
      .setPath(Schema.Struct({ view: Schema.String }))
      .addSuccess(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  )
{}
