import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Countable, TimeUnit } from "./counting.ts"
import { EventFilter } from "./filter.ts"
import { Event, EventCount, EventPage } from "./schemas.ts"
import * as Lax from "../domain/lax.ts"

/** The largest page of events. */
export const EVENT_PAGE_SIZE = 50

export class EventsApi extends HttpApiGroup.make("events")
  .add(HttpApiEndpoint.post("create", "/").setPayload(Schema.Array(Event)).addSuccess(Schema.Void))
  .add(
    HttpApiEndpoint.post("filter", "/filter")
      .setPayload(
        Schema.Struct({
          filter: Schema.optional(Schema.NullOr(EventFilter)),
          limit: Schema.optionalWith(Lax.int({ ge: 0, le: EVENT_PAGE_SIZE }), { default: () => EVENT_PAGE_SIZE })
        })
      )
      .addSuccess(EventPage)
  )
  .add(
    HttpApiEndpoint.get("next", "/filter/next")
      .setUrlParams(Schema.Struct({ "page-token": Schema.String }))
      // A token that was not issued here answers 403 (Forbidden, declared on the Api).
      .addSuccess(EventPage)
  )
  .add(
    HttpApiEndpoint.post("countBy", "/count-by/:countable")
      .setPath(Schema.Struct({ countable: Countable }))
      .setPayload(
        Schema.Struct({
          filter: EventFilter,
          time_unit: Schema.optionalWith(TimeUnit, { default: () => "day" as const }),
          time_interval: Schema.optionalWith(Lax.float({ ge: 0.01 }), { default: () => 1 })
        })
      )
      .addSuccess(Schema.Array(EventCount))
  )
  .prefix("/events")
{}
