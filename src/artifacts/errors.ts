/** The artifacts area's domain errors, with the reference's status and body. */
import { Schema } from "effect"
import { fixedDetail, httpError } from "../domain/errors.ts"

export class ArtifactNotFound extends Schema.TaggedError<ArtifactNotFound>()("ArtifactNotFound", {
  detail: fixedDetail("Artifact not found.")
}) {}

export const ArtifactNotFoundResponse = httpError(ArtifactNotFound, 404, { identifier: "ArtifactNotFound" })
