import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import {
  DefaultQueueKeptResponse,
  JobDefaultsBlockNotFoundResponse,
  WorkerNotFoundResponse,
  WorkPoolConflictResponse,
  WorkPoolNameReservedResponse,
  WorkPoolNameTakenResponse,
  WorkPoolNotFoundResponse,
  WorkQueueNameTakenResponse,
  WorkQueueNotFoundResponse
} from "./errors.ts"
import {
  CountWorkPoolsBody,
  HeartbeatBody,
  PoolConcurrencyStatusBody,
  PoolScheduledRunsBody,
  ReadWorkersBody,
  ReadWorkPoolsBody,
  ReadWorkQueuesBody,
  Worker,
  WorkerFlowRun,
  WorkPool,
  WorkPoolConcurrencyStatus,
  WorkPoolCreate,
  WorkPoolUpdate,
  WorkQueue,
  WorkQueueCreate,
  WorkQueueUpdate
} from "./schemas.ts"

const NamePath = Schema.Struct({ name: Schema.String })
const PoolPath = Schema.Struct({ work_pool_name: Schema.String })
const PoolItemPath = Schema.Struct({ work_pool_name: Schema.String, name: Schema.String })

export class WorkPoolsApi extends HttpApiGroup.make("workPools")
  .add(HttpApiEndpoint.post("create", "/").setPayload(WorkPoolCreate).addSuccess(WorkPool, { status: 201 }))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadWorkPoolsBody).addSuccess(Schema.Array(WorkPool)))
  .add(HttpApiEndpoint.post("count", "/count").setPayload(CountWorkPoolsBody).addSuccess(Schema.Int))
  .add(HttpApiEndpoint.get("read", "/:name").setPath(NamePath).addSuccess(WorkPool))
  .add(HttpApiEndpoint.patch("update", "/:name").setPath(NamePath).setPayload(WorkPoolUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("delete", "/:name").setPath(NamePath).addSuccess(Schema.Void))
  .add(
    HttpApiEndpoint.post("concurrencyStatus", "/:name/concurrency_status")
      .setPath(NamePath)
      .setPayload(PoolConcurrencyStatusBody)
      .addSuccess(WorkPoolConcurrencyStatus)
  )
  .add(
    HttpApiEndpoint.post("scheduledFlowRuns", "/:name/get_scheduled_flow_runs")
      .setPath(NamePath)
      .setPayload(PoolScheduledRunsBody)
      .addSuccess(Schema.Array(WorkerFlowRun))
  )
  .add(
    HttpApiEndpoint.post("createQueue", "/:work_pool_name/queues")
      .setPath(PoolPath)
      .setPayload(WorkQueueCreate)
      .addSuccess(WorkQueue, { status: 201 })
  )
  .add(
    HttpApiEndpoint.post("filterQueues", "/:work_pool_name/queues/filter")
      .setPath(PoolPath)
      .setPayload(ReadWorkQueuesBody)
      .addSuccess(Schema.Array(WorkQueue))
  )
  .add(HttpApiEndpoint.get("readQueue", "/:work_pool_name/queues/:name").setPath(PoolItemPath).addSuccess(WorkQueue))
  .add(
    HttpApiEndpoint.patch("updateQueue", "/:work_pool_name/queues/:name")
      .setPath(PoolItemPath)
      .setPayload(WorkQueueUpdate)
      .addSuccess(Schema.Void)
  )
  .add(HttpApiEndpoint.del("deleteQueue", "/:work_pool_name/queues/:name").setPath(PoolItemPath).addSuccess(Schema.Void))
  .add(
    HttpApiEndpoint.post("heartbeat", "/:work_pool_name/workers/heartbeat")
      .setPath(PoolPath)
      .setPayload(HeartbeatBody)
      .addSuccess(Schema.Void)
  )
  .add(
    HttpApiEndpoint.post("filterWorkers", "/:work_pool_name/workers/filter")
      .setPath(PoolPath)
      .setPayload(ReadWorkersBody)
      .addSuccess(Schema.Array(Worker))
  )
  .add(HttpApiEndpoint.del("deleteWorker", "/:work_pool_name/workers/:name").setPath(PoolItemPath).addSuccess(Schema.Void))
  .addError(WorkPoolNotFoundResponse)
  .addError(WorkQueueNotFoundResponse)
  .addError(WorkerNotFoundResponse)
  .addError(JobDefaultsBlockNotFoundResponse)
  .addError(WorkPoolNameReservedResponse)
  .addError(WorkPoolNameTakenResponse)
  .addError(WorkQueueNameTakenResponse)
  .addError(DefaultQueueKeptResponse)
  .addError(WorkPoolConflictResponse)
  .prefix("/work_pools")
{}
