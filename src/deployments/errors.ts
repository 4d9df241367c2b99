/** The deployments area's domain errors, with the reference's status and body, worded as it words them. */
import { Schema } from "effect"
import { fixedDetail, httpError, INTEGRITY_CONFLICT, ValidationError } from "../domain/errors.ts"
import { valueErrorItem } from "../domain/problems.ts"

export class DeploymentNotFound extends Schema.TaggedError<DeploymentNotFound>()("DeploymentNotFound", {
  detail: fixedDetail("Deployment not found")
}) {}

/** The PATCH and schedule routes (and the automations naming one) say it with a period, as the reference does. */
export const deploymentNotFoundDot = () => new DeploymentNotFound({ detail: "Deployment not found." })

/** A schedule of the deployment that does not exist (by id; or by slug, with its own words). */
export class ScheduleNotFound extends Schema.TaggedError<ScheduleNotFound>()("ScheduleNotFound", {
  detail: fixedDetail("Schedule not found.")
}) {}

/** A schedule's slug another schedule of the deployment has. */
export class ScheduleSlugTaken extends Schema.TaggedError<ScheduleSlugTaken>()("ScheduleSlugTaken", {
  detail: fixedDetail("Schedule slugs must be unique within a deployment.")
}) {}

/**
 * A write of the deployment, its schedules or a run of it broke a unique or foreign key: it names a
 * flow (or a queue, a block, a limit …) that does not exist, or one was deleted meanwhile.
 */
export class DeploymentConflict extends Schema.TaggedError<DeploymentConflict>()("DeploymentConflict", {
  detail: fixedDetail(INTEGRITY_CONFLICT)
}) {}

/** A created deployment names a storage or infrastructure block document that does not exist. */
export class DeploymentBlockNotFound extends Schema.TaggedError<DeploymentBlockNotFound>()("DeploymentBlockNotFound", {
  detail: Schema.String
}) {}

/** The global concurrency limit a deployment names; the reference words it unlike the limits routes. */
export class DeploymentLimitNotFound extends Schema.TaggedError<DeploymentLimitNotFound>()("DeploymentLimitNotFound", {
  detail: fixedDetail("Concurrency limit not found")
}) {}

/** A parameter's variable or template could not be resolved ("Error hydrating … parameters: …"). */
export class ParametersNotHydrated extends Schema.TaggedError<ParametersNotHydrated>()("ParametersNotHydrated", {
  detail: Schema.String
}) {}

/** Parameters the deployment's schema refuses, or that enforcement cannot check without a schema. */
export class ParametersRejected extends Schema.TaggedError<ParametersRejected>()("ParametersRejected", {
  detail: Schema.String
}) {}

/** A PATCH whose job variables its work pool's job template refuses. */
export class JobVariablesRejected extends Schema.TaggedError<JobVariablesRejected>()("JobVariablesRejected", {
  detail: Schema.String
}) {}

/** A run asked for in a work queue of a deployment that has no work pool. */
export class DeploymentWithoutPool extends Schema.TaggedError<DeploymentWithoutPool>()("DeploymentWithoutPool", {
  detail: Schema.String
}) {}

/** More runs in one bulk request than it takes. */
export class TooManyFlowRuns extends Schema.TaggedError<TooManyFlowRuns>()("TooManyFlowRuns", {
  detail: Schema.String
}) {}

export const DeploymentNotFoundResponse = httpError(DeploymentNotFound, 404, { identifier: "DeploymentNotFound" })
export const ScheduleNotFoundResponse = httpError(ScheduleNotFound, 404, { identifier: "ScheduleNotFound" })
export const ScheduleSlugTakenResponse = httpError(ScheduleSlugTaken, 409, { identifier: "ScheduleSlugTaken" })
export const DeploymentConflictResponse = httpError(DeploymentConflict, 409, { identifier: "DeploymentConflict" })
export const DeploymentBlockNotFoundResponse = httpError(DeploymentBlockNotFound, 409, { identifier: "DeploymentBlockNotFound" })
export const DeploymentLimitNotFoundResponse = httpError(DeploymentLimitNotFound, 404, { identifier: "DeploymentLimitNotFound" })
export const ParametersNotHydratedResponse = httpError(ParametersNotHydrated, 400, { identifier: "ParametersNotHydrated" })
export const ParametersRejectedResponse = httpError(ParametersRejected, 409, { identifier: "ParametersRejected" })
export const JobVariablesRejectedResponse = httpError(JobVariablesRejected, 409, { identifier: "JobVariablesRejected" })
export const DeploymentWithoutPoolResponse = httpError(DeploymentWithoutPool, 400, { identifier: "DeploymentWithoutPool" })
export const TooManyFlowRunsResponse = httpError(TooManyFlowRuns, 400, { identifier: "TooManyFlowRuns" })

/**
 * A 422 as the reference's validators raise it: "Value error, …" at `loc` under the body (its
 * `input`, the value there as sent, is filled in by the Api middleware).
 */
export const valueError = (loc: ReadonlyArray<string | number>, message: string) =>
  new ValidationError({ detail: [valueErrorItem(["body", ...loc], message)] })

/** A 422 the reference's route raises itself (HTTPException): a plain `detail` message. */
export const unprocessable = (detail: string) => new ValidationError({ detail })
