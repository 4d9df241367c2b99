/** The UI area's domain errors, with the reference's status and body. */
import { Schema } from "effect"
import { fixedDetail, httpError } from "../domain/errors.ts"

export class UiTaskRunNotFound extends Schema.TaggedError<UiTaskRunNotFound>()("UiTaskRunNotFound", {
  detail: fixedDetail("Task not found")
}) {}

export const UiTaskRunNotFoundResponse = httpError(UiTaskRunNotFound, 404, { identifier: "UiTaskRunNotFound" })
