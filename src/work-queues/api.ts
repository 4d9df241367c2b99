import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { FlowRun } from "../flow-runs/schemas.ts"
import {
  QueueConcurrencyStatusBody,
  QueueRunsBody,
  ReadWorkQueuesBody,
  WorkQueue,
  WorkQueueConcurrencyStatus,
  WorkQueueCreate,
  WorkQueueStatusDetail,
  WorkQueueUpdate
} from "../work-pools/schemas.ts"
import * as Lax from "../domain/lax.ts"
import {
  DefaultQueueKeptResponse,
  WorkPoolConflictResponse,
  WorkQueueNameTakenResponse,
  WorkQueueNotFoundResponse
} from "../work-pools/errors.ts"

const IdPath = Schema.Struct({ id: Id })

/** The work queue routes that predate work pools: queues by id, new ones in the default agent pool. */
export class WorkQueuesApi extends HttpApiGroup.make("workQueues")
  .add(HttpApiEndpoint.post("create", "/").setPayload(WorkQueueCreate).addSuccess(WorkQueue, { status: 201 }))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadWorkQueuesBody).addSuccess(Schema.Array(WorkQueue)))
  .add(HttpApiEndpoint.get("readByName", "/name/:name").setPath(Schema.Struct({ name: Schema.String })).addSuccess(WorkQueue))
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(WorkQueue))
  .add(HttpApiEndpoint.patch("update", "/:id").setPath(IdPath).setPayload(WorkQueueUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void))
  .add(
    HttpApiEndpoint.post("runs", "/:id/get_runs")
      .setPath(IdPath)
      .setPayload(QueueRunsBody)
      .setHeaders(Schema.Struct({ "x-prefect-ui": Schema.optional(Lax.TextBool) }))
      .addSuccess(Schema.Array(FlowRun))
  )
  .add(
    HttpApiEndpoint.post("concurrencyStatus", "/:id/concurrency_status")
      .setPath(IdPath)
      .setPayload(QueueConcurrencyStatusBody)
      .addSuccess(WorkQueueConcurrencyStatus)
  )
  .add(HttpApiEndpoint.get("status", "/:id/status").setPath(IdPath).addSuccess(WorkQueueStatusDetail))
  .addError(WorkQueueNotFoundResponse)
  .addError(WorkQueueNameTakenResponse)
  .addError(DefaultQueueKeptResponse)
  .addError(WorkPoolConflictResponse)
  .prefix("/work_queues")
{}
