/** The endpoints the reference UI calls, under `/ui`: a group per area, as the reference routes them. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { UiTaskRunNotFoundResponse } from "./errors.ts"
import {
  CountByState,
  CountsById,
  DashboardTaskRunCountsBody,
  FlowIdsBody,
  FlowRunIdsBody,
  NextRunsByFlow,
  SchemaValuesValidationResponse,
  SimpleFlowRun,
  TaskRunCount,
  TaskRunCountsByStateBody,
  UiFlowRunHistoryBody,
  UITaskRun,
  ValidateSchemaValuesBody
} from "./schemas.ts"

export class UiFlowsApi extends HttpApiGroup.make("uiFlows")
  .add(HttpApiEndpoint.post("countDeployments", "/count-deployments").setPayload(FlowIdsBody).addSuccess(CountsById))
  .add(HttpApiEndpoint.post("nextRuns", "/next-runs").setPayload(FlowIdsBody).addSuccess(NextRunsByFlow))
  .prefix("/ui/flows")
{}

export class UiFlowRunsApi extends HttpApiGroup.make("uiFlowRuns")
  .add(HttpApiEndpoint.post("history", "/history").setPayload(UiFlowRunHistoryBody).addSuccess(Schema.Array(SimpleFlowRun)))
  .add(HttpApiEndpoint.post("countTaskRuns", "/count-task-runs").setPayload(FlowRunIdsBody).addSuccess(CountsById))
  .prefix("/ui/flow_runs")
{}

export class UiTaskRunsApi extends HttpApiGroup.make("uiTaskRuns")
  .add(
    HttpApiEndpoint.post("dashboardCounts", "/dashboard/counts")
      .setPayload(DashboardTaskRunCountsBody)
      .addSuccess(Schema.Array(TaskRunCount))
  )
  .add(HttpApiEndpoint.post("countByState", "/count").setPayload(TaskRunCountsByStateBody).addSuccess(CountByState))
  .add(HttpApiEndpoint.get("read", "/:id").setPath(Schema.Struct({ id: Id })).addSuccess(UITaskRun))
  .addError(UiTaskRunNotFoundResponse)
  .prefix("/ui/task_runs")
{}

export class UiSchemasApi extends HttpApiGroup.make("uiSchemas")
  .add(
    HttpApiEndpoint.post("validate", "/validate").setPayload(ValidateSchemaValuesBody).addSuccess(SchemaValuesValidationResponse)
  )
  .prefix("/ui/schemas")
{}
