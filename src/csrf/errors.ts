/** The CSRF area's domain errors, with the reference's status and body. */
import { Schema } from "effect"
import { fixedDetail, httpError } from "../domain/errors.ts"

/** A token was asked for while CSRF protection is off. */
export class CsrfProtectionDisabled extends Schema.TaggedError<CsrfProtectionDisabled>()("CsrfProtectionDisabled", {
  detail: fixedDetail("CSRF protection is disabled.")
}) {}

export const CsrfProtectionDisabledResponse = httpError(CsrfProtectionDisabled, 422, { identifier: "CsrfProtectionDisabled" })
