/** The task runs area's domain errors, with the reference's status and body. */
import { Schema } from "effect"
import { fixedDetail, httpError, INTEGRITY_CONFLICT } from "../domain/errors.ts"

/** The reference says "Task not found" when reading or deleting a task run… */
export class TaskNotFound extends Schema.TaggedError<TaskNotFound>()("TaskNotFound", {
  detail: fixedDetail("Task not found")
}) {}

/** …and "Task run not found" when changing one. */
export class TaskRunNotFound extends Schema.TaggedError<TaskRunNotFound>()("TaskRunNotFound", {
  detail: fixedDetail("Task run not found")
}) {}

export class TaskRunStateNotFound extends Schema.TaggedError<TaskRunStateNotFound>()("TaskRunStateNotFound", {
  detail: fixedDetail("Task run state not found")
}) {}

/** A new task run names a flow run that does not exist, or an id another task run has. */
export class TaskRunConflict extends Schema.TaggedError<TaskRunConflict>()("TaskRunConflict", {
  detail: fixedDetail(INTEGRITY_CONFLICT)
}) {}

export const TaskNotFoundResponse = httpError(TaskNotFound, 404, { identifier: "TaskNotFound" })
export const TaskRunNotFoundResponse = httpError(TaskRunNotFound, 404, { identifier: "TaskRunNotFound" })
export const TaskRunStateNotFoundResponse = httpError(TaskRunStateNotFound, 404, { identifier: "TaskRunStateNotFound" })
export const TaskRunConflictResponse = httpError(TaskRunConflict, 409, { identifier: "TaskRunConflict" })
