import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { ConcurrencyLimitNameTakenResponse } from "../concurrency/errors.ts"
import {
  DeploymentBlockNotFoundResponse,
  DeploymentConflictResponse,
  DeploymentLimitNotFoundResponse,
  DeploymentNotFoundResponse,
  DeploymentWithoutPoolResponse,
  JobVariablesRejectedResponse,
  ParametersNotHydratedResponse,
  ParametersRejectedResponse,
  ScheduleNotFoundResponse,
  ScheduleSlugTakenResponse,
  TooManyFlowRunsResponse
} from "./errors.ts"
import { FlowRun } from "../flow-runs/schemas.ts"
import { WorkPoolConflictResponse, WorkPoolNotFoundResponse } from "../work-pools/errors.ts"
import { CoreWorkQueue } from "../work-pools/schemas.ts"
import {
  BulkDeleteDeploymentsBody,
  CountDeploymentsBody,
  Deployment,
  DeploymentBulkDeleteResponse,
  DeploymentCreate,
  DeploymentFlowRunCreate,
  DeploymentPaginationResponse,
  DeploymentSchedule,
  DeploymentScheduleCreate,
  DeploymentScheduleUpdate,
  DeploymentUpdate,
  FlowRunBulkCreateResponse,
  PaginateDeploymentsBody,
  ReadDeploymentsBody,
  ScheduledFlowRunsBody,
  ScheduleDeploymentBody
} from "./schemas.ts"

const IdPath = Schema.Struct({ id: Id })
const SchedulePath = Schema.Struct({ id: Id, schedule_id: Id })

export class DeploymentsApi extends HttpApiGroup.make("deployments")
  // 201 when the deployment was created, 200 when one of that flow and name was updated.
  .add(HttpApiEndpoint.post("create", "/").setPayload(DeploymentCreate).addSuccess(Deployment))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadDeploymentsBody).addSuccess(Schema.Array(Deployment)))
  .add(HttpApiEndpoint.post("paginate", "/paginate").setPayload(PaginateDeploymentsBody).addSuccess(DeploymentPaginationResponse))
  .add(HttpApiEndpoint.post("count", "/count").setPayload(CountDeploymentsBody).addSuccess(Schema.Int))
  .add(
    HttpApiEndpoint.post("scheduledFlowRuns", "/get_scheduled_flow_runs")
      .setPayload(ScheduledFlowRunsBody)
      .addSuccess(Schema.Array(FlowRun))
  )
  .add(HttpApiEndpoint.post("bulkDelete", "/bulk_delete").setPayload(BulkDeleteDeploymentsBody).addSuccess(DeploymentBulkDeleteResponse))
  .add(
    HttpApiEndpoint.get("readByName", "/name/:flow_name/:deployment_name")
      .setPath(Schema.Struct({ flow_name: Schema.String, deployment_name: Schema.String }))
      .addSuccess(Deployment)
  )
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(Deployment))
  .add(HttpApiEndpoint.patch("update", "/:id").setPath(IdPath).setPayload(DeploymentUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.post("schedule", "/:id/schedule").setPath(IdPath).setPayload(ScheduleDeploymentBody).addSuccess(Schema.Null))
  .add(HttpApiEndpoint.post("pause", "/:id/pause_deployment").setPath(IdPath).addSuccess(Schema.Null))
  .add(HttpApiEndpoint.post("resume", "/:id/resume_deployment").setPath(IdPath).addSuccess(Schema.Null))
  // 201 when the run was created, 200 for the run an idempotency key already names.
  .add(
    HttpApiEndpoint.post("createFlowRun", "/:id/create_flow_run")
      .setPath(IdPath)
      .setPayload(DeploymentFlowRunCreate)
      .addSuccess(FlowRun)
  )
  .add(
    HttpApiEndpoint.post("createFlowRuns", "/:id/create_flow_run/bulk")
      .setPath(IdPath)
      .setPayload(Schema.Array(DeploymentFlowRunCreate))
      .addSuccess(FlowRunBulkCreateResponse)
  )
  .add(HttpApiEndpoint.get("workQueueCheck", "/:id/work_queue_check").setPath(IdPath).addSuccess(Schema.Array(CoreWorkQueue)))
  .add(HttpApiEndpoint.get("listSchedules", "/:id/schedules").setPath(IdPath).addSuccess(Schema.Array(DeploymentSchedule)))
  .add(
    HttpApiEndpoint.post("createSchedules", "/:id/schedules")
      .setPath(IdPath)
      .setPayload(Schema.Array(DeploymentScheduleCreate))
      .addSuccess(Schema.Array(DeploymentSchedule), { status: 201 })
  )
  .add(
    HttpApiEndpoint.patch("updateSchedule", "/:id/schedules/:schedule_id")
      .setPath(SchedulePath)
      .setPayload(DeploymentScheduleUpdate)
      .addSuccess(Schema.Void)
  )
  .add(HttpApiEndpoint.del("deleteSchedule", "/:id/schedules/:schedule_id").setPath(SchedulePath).addSuccess(Schema.Void))
  .addError(DeploymentNotFoundResponse)
  .addError(ScheduleNotFoundResponse)
  .addError(DeploymentLimitNotFoundResponse)
  .addError(DeploymentConflictResponse)
  .addError(DeploymentBlockNotFoundResponse)
  .addError(ScheduleSlugTakenResponse)
  .addError(ParametersRejectedResponse)
  .addError(JobVariablesRejectedResponse)
  .addError(ParametersNotHydratedResponse)
  .addError(DeploymentWithoutPoolResponse)
  .addError(TooManyFlowRunsResponse)
  // A deployment's own concurrency limit (deployments/service.ts) is created by name.
  .addError(ConcurrencyLimitNameTakenResponse)
  // The pool and queue a deployment or its run names (work-pools/queue-lookup.ts).
  .addError(WorkPoolNotFoundResponse)
  .addError(WorkPoolConflictResponse)
  .prefix("/deployments")
{}
