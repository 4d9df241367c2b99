/** The saved searches area's domain errors, with the reference's status and body. */
import { Schema } from "effect"
import { fixedDetail, httpError } from "../domain/errors.ts"

export class SavedSearchNotFound extends Schema.TaggedError<SavedSearchNotFound>()("SavedSearchNotFound", {
  detail: fixedDetail("Saved search not found")
}) {}

export const SavedSearchNotFoundResponse = httpError(SavedSearchNotFound, 404, { identifier: "SavedSearchNotFound" })
