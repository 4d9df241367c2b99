/** The automations area's domain errors, with the reference's status and body. */
import { Schema } from "effect"
import { fixedDetail, httpError } from "../domain/errors.ts"

export class AutomationNotFound extends Schema.TaggedError<AutomationNotFound>()("AutomationNotFound", {
  detail: fixedDetail("Automation not found")
}) {}

export const AutomationNotFoundResponse = httpError(AutomationNotFound, 404, { identifier: "AutomationNotFound" })
