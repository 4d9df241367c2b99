import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { ArtifactNotFoundResponse } from "./errors.ts"
import {
  Artifact,
  ArtifactCollection,
  ArtifactCreate,
  ArtifactUpdate,
  CountArtifactsBody,
  CountLatestArtifactsBody,
  ReadArtifactsBody,
  ReadLatestArtifactsBody
} from "./schemas.ts"

const IdPath = Schema.Struct({ id: Id })

export class ArtifactsApi extends HttpApiGroup.make("artifacts")
  .add(HttpApiEndpoint.post("create", "/").setPayload(ArtifactCreate).addSuccess(Artifact, { status: 201 }))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadArtifactsBody).addSuccess(Schema.Array(Artifact)))
  .add(HttpApiEndpoint.post("count", "/count").setPayload(CountArtifactsBody).addSuccess(Schema.Int))
  .add(HttpApiEndpoint.post("filterLatest", "/latest/filter").setPayload(ReadLatestArtifactsBody).addSuccess(Schema.Array(ArtifactCollection)))
  .add(HttpApiEndpoint.post("countLatest", "/latest/count").setPayload(CountLatestArtifactsBody).addSuccess(Schema.Int))
  .add(HttpApiEndpoint.get("readLatest", "/:key/latest").setPath(Schema.Struct({ key: Schema.String })).addSuccess(Artifact))
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(Artifact))
  .add(HttpApiEndpoint.patch("update", "/:id").setPath(IdPath).setPayload(ArtifactUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void))
  .addError(ArtifactNotFoundResponse)
  .prefix("/artifacts")
{}
