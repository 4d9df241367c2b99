import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import {
  ConcurrencyLeaseGoneResponse,
  ConcurrencyLimitNameTakenResponse,
  ConcurrencyLimitNotFoundResponse,
  TagConcurrencyLimitNotFoundResponse
} from "./errors.ts"
import { LockedResponse } from "../http/errors.ts"
import { validatedAfterRouting } from "../http/routes.ts"
import {
  ConcurrencyLimit,
  ConcurrencyLimitCreate,
  ConcurrencyLimitV2,
  ConcurrencyLimitV2Create,
  ConcurrencyLimitV2Update,
  ConcurrencyLimitWithLease,
  DecrementBody,
  DecrementWithLeaseBody,
  GlobalConcurrencyLimit,
  IncrementBody,
  IncrementWithLeaseBody,
  MinimalConcurrencyLimit,
  PageBody,
  RenewLeaseBody,
  ResetBody,
  TagSlotsBody
} from "./schemas.ts"

const IdOrName = Schema.Struct({ id_or_name: Schema.String })
const IdPath = Schema.Struct({ id: Id })
const TagPath = Schema.Struct({ tag: Schema.String })

/** Global concurrency limits. Increments answer 423 with Retry-After when a limit is full. */
export class ConcurrencyLimitsV2Api extends HttpApiGroup.make("concurrencyLimitsV2")
  .add(HttpApiEndpoint.post("create", "/").setPayload(ConcurrencyLimitV2Create).addSuccess(ConcurrencyLimitV2, { status: 201 }))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(PageBody).addSuccess(Schema.Array(GlobalConcurrencyLimit)))
  .add(HttpApiEndpoint.post("increment", "/increment").setPayload(IncrementBody).addSuccess(Schema.Array(MinimalConcurrencyLimit)))
  .add(
    HttpApiEndpoint.post("incrementWithLease", "/increment-with-lease")
      .setPayload(IncrementWithLeaseBody)
      .addSuccess(ConcurrencyLimitWithLease)
  )
  .add(HttpApiEndpoint.post("decrement", "/decrement").setPayload(DecrementBody).addSuccess(Schema.Array(MinimalConcurrencyLimit)))
  .add(HttpApiEndpoint.post("decrementWithLease", "/decrement-with-lease").setPayload(DecrementWithLeaseBody).addSuccess(Schema.Void))
  .add(
    // The reference routes any lease id here and validates it after: a malformed one is a 422, not a 404.
    HttpApiEndpoint.post("renewLease", "/leases/:lease_id/renew")
      .setPath(Schema.Struct({ lease_id: validatedAfterRouting(Id) }))
      .setPayload(RenewLeaseBody)
      .addSuccess(Schema.Void)
  )
  .add(HttpApiEndpoint.get("read", "/:id_or_name").setPath(IdOrName).addSuccess(GlobalConcurrencyLimit))
  .add(HttpApiEndpoint.patch("update", "/:id_or_name").setPath(IdOrName).setPayload(ConcurrencyLimitV2Update).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("delete", "/:id_or_name").setPath(IdOrName).addSuccess(Schema.Void))
  .addError(ConcurrencyLimitNotFoundResponse)
  .addError(ConcurrencyLimitNameTakenResponse)
  .addError(ConcurrencyLeaseGoneResponse)
  .prefix("/v2/concurrency_limits")
  .addError(LockedResponse)
{}

/** Tag concurrency limits, kept as the global limits named `tag:<tag>`. */
export class ConcurrencyLimitsApi extends HttpApiGroup.make("concurrencyLimits")
  // 201 when the tag's limit was created, 200 when its limit was changed.
  .add(HttpApiEndpoint.post("create", "/").setPayload(ConcurrencyLimitCreate).addSuccess(ConcurrencyLimit))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(PageBody).addSuccess(Schema.Array(ConcurrencyLimit)))
  .add(HttpApiEndpoint.post("increment", "/increment").setPayload(TagSlotsBody).addSuccess(Schema.Array(MinimalConcurrencyLimit)))
  .add(HttpApiEndpoint.post("decrement", "/decrement").setPayload(TagSlotsBody).addSuccess(Schema.Array(MinimalConcurrencyLimit)))
  .add(HttpApiEndpoint.get("readByTag", "/tag/:tag").setPath(TagPath).addSuccess(ConcurrencyLimit))
  .add(HttpApiEndpoint.post("reset", "/tag/:tag/reset").setPath(TagPath).setPayload(ResetBody).addSuccess(Schema.Null))
  .add(HttpApiEndpoint.del("deleteByTag", "/tag/:tag").setPath(TagPath).addSuccess(Schema.Null))
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(ConcurrencyLimit))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Null))
  .addError(TagConcurrencyLimitNotFoundResponse)
  .addError(ConcurrencyLimitNameTakenResponse)
  .prefix("/concurrency_limits")
  .addError(LockedResponse)
{}
