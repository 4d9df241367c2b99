/** The variables area's domain errors, with the reference's status and body. */
import { Schema } from "effect"
import { fixedDetail, httpError } from "../domain/errors.ts"

export class VariableNotFound extends Schema.TaggedError<VariableNotFound>()("VariableNotFound", {
  detail: fixedDetail("Variable not found.")
}) {}

/** Another variable has the name: on create the reference names it, on update it answers its integrity conflict. */
export class VariableNameTaken extends Schema.TaggedError<VariableNameTaken>()("VariableNameTaken", {
  detail: Schema.String
}) {}

export const VariableNotFoundResponse = httpError(VariableNotFound, 404, { identifier: "VariableNotFound" })
export const VariableNameTakenResponse = httpError(VariableNameTaken, 409, { identifier: "VariableNameTaken" })
