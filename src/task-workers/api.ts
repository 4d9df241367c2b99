import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { TaskWorker, TaskWorkersBody } from "../work-pools/schemas.ts"

export class TaskWorkersApi extends HttpApiGroup.make("taskWorkers")
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(TaskWorkersBody).addSuccess(Schema.Array(TaskWorker)))
  .prefix("/task_workers")
{}
