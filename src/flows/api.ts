import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { FlowNotFoundResponse } from "./errors.ts"
import {
  BulkDeleteFlowsBody,
  CountFlowsBody,
  Flow,
  FlowBulkDeleteResponse,
  FlowCreate,
  FlowPaginationResponse,
  FlowUpdate,
  PaginateFlowsBody,
  ReadFlowsBody
} from "./schemas.ts"

const IdPath = Schema.Struct({ id: Id })

export class FlowsApi extends HttpApiGroup.make("flows")
  // 200 with the existing flow, 201 when it was created.
  .add(HttpApiEndpoint.post("create", "/").setPayload(FlowCreate).addSuccess(Flow))
  .add(HttpApiEndpoint.patch("update", "/:id").setPath(IdPath).setPayload(FlowUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.post("count", "/count").setPayload(CountFlowsBody).addSuccess(Schema.Int))
  .add(HttpApiEndpoint.get("readByName", "/name/:name").setPath(Schema.Struct({ name: Schema.String })).addSuccess(Flow))
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(Flow))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadFlowsBody).addSuccess(Schema.Array(Flow)))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.post("bulkDelete", "/bulk_delete").setPayload(BulkDeleteFlowsBody).addSuccess(FlowBulkDeleteResponse))
  .add(HttpApiEndpoint.post("paginate", "/paginate").setPayload(PaginateFlowsBody).addSuccess(FlowPaginationResponse))
  .addError(FlowNotFoundResponse)
  .prefix("/flows")
{}
