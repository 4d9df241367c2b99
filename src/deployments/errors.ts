/** The deployment routes' errors, worded as the reference words them. */
import { NotFound, ValidationError } from "../domain/errors.ts"
import { valueErrorItem } from "../domain/problems.ts"

export const deploymentNotFound = new NotFound({ detail: "Deployment not found" })
/** The PATCH and schedule routes say it with a period, as the reference does. */
export const deploymentNotFoundDot = new NotFound({ detail: "Deployment not found." })
export const scheduleNotFound = new NotFound({ detail: "Schedule not found." })

/**
 * A 422 as the reference's validators raise it: "Value error, …" at `loc` under the body (its
 * `input`, the value there as sent, is filled in by the Api middleware).
 */
export const valueError = (loc: ReadonlyArray<string | number>, message: string) =>
  new ValidationError({ detail: [valueErrorItem(["body", ...loc], message)] })

/** A 422 the reference's route raises itself (HTTPException): a plain `detail` message. */
export const unprocessable = (detail: string) => new ValidationError({ detail })
