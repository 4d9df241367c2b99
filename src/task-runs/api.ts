import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { TaskNotFoundResponse, TaskRunConflictResponse, TaskRunNotFoundResponse, TaskRunStateNotFoundResponse } from "./errors.ts"
import { State } from "../domain/states.ts"
import { HistoryResponse, OrchestrationResult, SetFlowRunStateBody } from "../flow-runs/schemas.ts"
import {
  CountTaskRunsBody,
  PaginateTaskRunsBody,
  ReadTaskRunsBody,
  TaskRun,
  TaskRunCreate,
  TaskRunHistoryBody,
  TaskRunPaginationResponse,
  TaskRunUpdate
} from "./schemas.ts"

const IdPath = Schema.Struct({ id: Id })

export class TaskRunsApi extends HttpApiGroup.make("taskRuns")
  // 200 with the existing task run for a repeated key, 201 when it was created.
  .add(HttpApiEndpoint.post("create", "/").setPayload(TaskRunCreate).addSuccess(TaskRun))
  .add(HttpApiEndpoint.post("count", "/count").setPayload(CountTaskRunsBody).addSuccess(Schema.Int))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadTaskRunsBody).addSuccess(Schema.Array(TaskRun)))
  .add(HttpApiEndpoint.post("paginate", "/paginate").setPayload(PaginateTaskRunsBody).addSuccess(TaskRunPaginationResponse))
  .add(HttpApiEndpoint.post("history", "/history").setPayload(TaskRunHistoryBody).addSuccess(Schema.Array(HistoryResponse)))
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(TaskRun))
  .add(HttpApiEndpoint.patch("update", "/:id").setPath(IdPath).setPayload(TaskRunUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void))
  .add(
    HttpApiEndpoint.post("setState", "/:id/set_state").setPath(IdPath).setPayload(SetFlowRunStateBody).addSuccess(OrchestrationResult)
  )
  .addError(TaskNotFoundResponse)
  .addError(TaskRunNotFoundResponse)
  .addError(TaskRunConflictResponse)
  .prefix("/task_runs")
{}

export class TaskRunStatesApi extends HttpApiGroup.make("taskRunStates")
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(State))
  .add(HttpApiEndpoint.get("list", "/").setUrlParams(Schema.Struct({ task_run_id: Id })).addSuccess(Schema.Array(State)))
  .addError(TaskRunStateNotFoundResponse)
  .prefix("/task_run_states")
{}
