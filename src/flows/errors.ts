/** The flows area's domain errors, with the reference's status and body. */
import { Schema } from "effect"
import { fixedDetail, httpError } from "../domain/errors.ts"

export class FlowNotFound extends Schema.TaggedError<FlowNotFound>()("FlowNotFound", {
  detail: fixedDetail("Flow not found")
}) {}

export const FlowNotFoundResponse = httpError(FlowNotFound, 404, { identifier: "FlowNotFound" })
