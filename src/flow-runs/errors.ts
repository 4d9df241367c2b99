/** The flow runs area's domain errors, with the reference's status and body. */
import { Schema } from "effect"
import { fixedDetail, httpError, INTEGRITY_CONFLICT } from "../domain/errors.ts"

export class FlowRunNotFound extends Schema.TaggedError<FlowRunNotFound>()("FlowRunNotFound", {
  detail: fixedDetail("Flow run not found")
}) {}

export class FlowRunStateNotFound extends Schema.TaggedError<FlowRunStateNotFound>()("FlowRunStateNotFound", {
  detail: fixedDetail("Flow run state not found")
}) {}

export class FlowRunInputNotFound extends Schema.TaggedError<FlowRunInputNotFound>()("FlowRunInputNotFound", {
  detail: fixedDetail("Flow run input not found")
}) {}

export class FlowRunInputKeyTaken extends Schema.TaggedError<FlowRunInputKeyTaken>()("FlowRunInputKeyTaken", {
  detail: fixedDetail("A flow run input with this key already exists.")
}) {}

/** A new flow run names a flow that does not exist (or was deleted while the run was made). */
export class FlowRunConflict extends Schema.TaggedError<FlowRunConflict>()("FlowRunConflict", {
  detail: fixedDetail(INTEGRITY_CONFLICT)
}) {}

export const FlowRunNotFoundResponse = httpError(FlowRunNotFound, 404, { identifier: "FlowRunNotFound" })
export const FlowRunStateNotFoundResponse = httpError(FlowRunStateNotFound, 404, { identifier: "FlowRunStateNotFound" })
export const FlowRunInputNotFoundResponse = httpError(FlowRunInputNotFound, 404, { identifier: "FlowRunInputNotFound" })
export const FlowRunInputKeyTakenResponse = httpError(FlowRunInputKeyTaken, 409, { identifier: "FlowRunInputKeyTaken" })
export const FlowRunConflictResponse = httpError(FlowRunConflict, 409, { identifier: "FlowRunConflict" })
