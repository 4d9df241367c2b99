import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { CsrfProtectionDisabledResponse } from "./errors.ts"
import { Timestamp } from "../domain/time.ts"

export const CsrfToken = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  token: Schema.String,
  client: Schema.String,
  expiration: Timestamp
}).annotations({ identifier: "CsrfToken" })
export type CsrfToken = typeof CsrfToken.Type

export class CsrfApi extends HttpApiGroup.make("csrf")
  .add(
    HttpApiEndpoint.get("token", "/csrf-token")
      .setUrlParams(Schema.Struct({ client: Schema.String }))
      .addSuccess(CsrfToken)
      .addError(CsrfProtectionDisabledResponse)
  )
{}
