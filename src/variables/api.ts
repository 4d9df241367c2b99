import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { VariableNameTakenResponse, VariableNotFoundResponse } from "./errors.ts"
import { CountVariablesBody, ReadVariablesBody, Variable, VariableCreate, VariableUpdate } from "./schemas.ts"

const IdPath = Schema.Struct({ id: Id })
const NamePath = Schema.Struct({ name: Schema.String })

export class VariablesApi extends HttpApiGroup.make("variables")
  .add(HttpApiEndpoint.post("create", "/").setPayload(VariableCreate).addSuccess(Variable, { status: 201 }))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadVariablesBody).addSuccess(Schema.Array(Variable)))
  .add(HttpApiEndpoint.post("count", "/count").setPayload(CountVariablesBody).addSuccess(Schema.Int))
  .add(HttpApiEndpoint.get("readByName", "/name/:name").setPath(NamePath).addSuccess(Variable))
  .add(HttpApiEndpoint.patch("updateByName", "/name/:name").setPath(NamePath).setPayload(VariableUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("deleteByName", "/name/:name").setPath(NamePath).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(Variable))
  .add(HttpApiEndpoint.patch("update", "/:id").setPath(IdPath).setPayload(VariableUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void))
  .addError(VariableNotFoundResponse)
  .addError(VariableNameTakenResponse)
  .prefix("/variables")
{}
