import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { WorkPoolNotFoundResponse, WorkQueueNotFoundResponse } from "../work-pools/errors.ts"
import {
  BulkDeleteFlowRunsBody,
  BulkSetFlowRunStateBody,
  CreateFlowRunInputBody,
  FilterFlowRunInputBody,
  FlowRunBulkSetStateResponse,
  FlowRunHistoryBody,
  FlowRunInput,
  FlowRunLabelsBody,
  HistoryResponse,
  LatenessBody,
  CountFlowRunsBody,
  FlowRun,
  FlowRunBulkDeleteResponse,
  FlowRunCreate,
  FlowRunPaginationResponse,
  FlowRunUpdate,
  OrchestrationResult,
  PaginateFlowRunsBody,
  ReadFlowRunsBody,
  ResumeFlowRunBody,
  SetFlowRunStateBody
} from "./schemas.ts"
import { State } from "../domain/states.ts"
import { Timestamp } from "../domain/time.ts"
import { DependencyResult, Graph } from "./graph.ts"
import {
  FlowRunConflictResponse,
  FlowRunInputKeyTakenResponse,
  FlowRunInputNotFoundResponse,
  FlowRunNotFoundResponse,
  FlowRunStateNotFoundResponse
} from "./errors.ts"

const IdPath = Schema.Struct({ id: Id })
const InputPath = Schema.Struct({ id: Id, key: Schema.String })

export class FlowRunsApi extends HttpApiGroup.make("flowRuns")
  // 200 with the existing run for a repeated idempotency key, 201 when it was created.
  .add(
    HttpApiEndpoint.post("create", "/")
      .setPayload(FlowRunCreate)
      .addSuccess(FlowRun)
      // The pool and queue the run names (work-pools/queue-lookup.ts).
      .addError(WorkPoolNotFoundResponse)
      .addError(WorkQueueNotFoundResponse)
  )
  .add(HttpApiEndpoint.post("count", "/count").setPayload(CountFlowRunsBody).addSuccess(Schema.Int))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadFlowRunsBody).addSuccess(Schema.Array(FlowRun)))
  .add(HttpApiEndpoint.post("paginate", "/paginate").setPayload(PaginateFlowRunsBody).addSuccess(FlowRunPaginationResponse))
  .add(HttpApiEndpoint.post("bulkDelete", "/bulk_delete").setPayload(BulkDeleteFlowRunsBody).addSuccess(FlowRunBulkDeleteResponse))
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(FlowRun))
  .add(HttpApiEndpoint.patch("update", "/:id").setPath(IdPath).setPayload(FlowRunUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.post("lateness", "/lateness").setPayload(LatenessBody).addSuccess(Schema.NullOr(Schema.Number)))
  .add(HttpApiEndpoint.post("history", "/history").setPayload(FlowRunHistoryBody).addSuccess(Schema.Array(HistoryResponse)))
  .add(
    HttpApiEndpoint.post("bulkSetState", "/bulk_set_state").setPayload(BulkSetFlowRunStateBody).addSuccess(FlowRunBulkSetStateResponse)
  )
  .add(HttpApiEndpoint.patch("updateLabels", "/:id/labels").setPath(IdPath).setPayload(FlowRunLabelsBody).addSuccess(Schema.Void))
  .add(
    HttpApiEndpoint.post("createInput", "/:id/input")
      .setPath(IdPath)
      .setPayload(CreateFlowRunInputBody)
      .addSuccess(Schema.Null, { status: 201 })
  )
  .add(
    HttpApiEndpoint.post("filterInputs", "/:id/input/filter")
      .setPath(IdPath)
      .setPayload(FilterFlowRunInputBody)
      .addSuccess(Schema.Array(FlowRunInput))
  )
  .add(HttpApiEndpoint.get("readInput", "/:id/input/:key").setPath(InputPath).addSuccess(Schema.String))
  .add(HttpApiEndpoint.del("deleteInput", "/:id/input/:key").setPath(InputPath).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.post("resume", "/:id/resume").setPath(IdPath).setPayload(ResumeFlowRunBody).addSuccess(OrchestrationResult))
  // A CSV file, streamed a page of logs at a time.
  .add(HttpApiEndpoint.get("downloadLogs", "/:id/logs/download").setPath(IdPath).addSuccess(Schema.String))
  .add(HttpApiEndpoint.get("graph", "/:id/graph").setPath(IdPath).addSuccess(Schema.Array(DependencyResult)))
  .add(
    HttpApiEndpoint.get("graphV2", "/:id/graph-v2")
      .setPath(IdPath)
      .setUrlParams(Schema.Struct({ since: Schema.optional(Timestamp) }))
      .addSuccess(Graph)
  )
  // 201 when a new state was stored, 200 otherwise.
  .add(
    HttpApiEndpoint.post("setState", "/:id/set_state").setPath(IdPath).setPayload(SetFlowRunStateBody).addSuccess(OrchestrationResult)
  )
  .addError(FlowRunNotFoundResponse)
  .addError(FlowRunInputNotFoundResponse)
  .addError(FlowRunInputKeyTakenResponse)
  .addError(FlowRunConflictResponse)
  .prefix("/flow_runs")
{}

export class FlowRunStatesApi extends HttpApiGroup.make("flowRunStates")
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(State))
  .add(
    HttpApiEndpoint.get("list", "/")
      .setUrlParams(Schema.Struct({ flow_run_id: Id }))
      .addSuccess(Schema.Array(State))
  )
  .addError(FlowRunStateNotFoundResponse)
  .prefix("/flow_run_states")
{}
