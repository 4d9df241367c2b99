/** Events on the wire: events as clients send them, as the server received them, pages and counts. */
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { JsonObject } from "../domain/schemas.ts"
import { Timestamp } from "../domain/time.ts"

const RESOURCE_ID = "prefect.resource.id"
const RESOURCE_ROLE = "prefect.resource.role"

const Labels = Schema.Record({ key: Schema.String, value: Schema.String })

/** An observable object: labels, one of them its non-empty `prefect.resource.id`. */
export const Resource = Labels.pipe(
  Schema.filter((labels) =>
    !(RESOURCE_ID in labels)
      ? "Resources must include the prefect.resource.id label"
      : labels[RESOURCE_ID] === ""
      ? "The prefect.resource.id label must be non-empty"
      : true,
    // Generated values (the fuzz tests) carry the label: random records almost never do.
    {
      arbitrary: () => (fc) =>
        fc
          .tuple(fc.dictionary(fc.string(), fc.string()), fc.string({ minLength: 1 }))
          .map(([labels, id]) => ({ ...labels, [RESOURCE_ID]: id }))
    }
  )
).annotations({ identifier: "Resource" })
export type Resource = typeof Resource.Type

/** A resource with a role in an event: also a non-empty `prefect.resource.role`. */
export const RelatedResource = Resource.pipe(
  Schema.filter((labels) =>
    !(RESOURCE_ROLE in labels)
      ? "Related Resources must include the prefect.resource.role label"
      : labels[RESOURCE_ROLE] === ""
      ? "The prefect.resource.role label must be non-empty"
      : true,
    {
      arbitrary: () => (fc) =>
        fc
          .tuple(fc.dictionary(fc.string(), fc.string()), fc.string({ minLength: 1 }), fc.string({ minLength: 1 }))
          .map(([labels, id, role]) => ({ ...labels, [RESOURCE_ID]: id, [RESOURCE_ROLE]: role }))
    }
  )
).annotations({ identifier: "RelatedResource" })
export type RelatedResource = typeof RelatedResource.Type

const eventFields = {
  occurred: Timestamp,
  event: Schema.String,
  resource: Resource,
  related: Schema.optionalWith(Schema.Array(RelatedResource), { default: () => [] }),
  payload: Schema.optionalWith(JsonObject, { default: () => ({}) }),
  id: Id,
  follows: Schema.optionalWith(Schema.NullOr(Id), { default: () => null })
}

/** An event as a client sends it. */
export const Event = Schema.Struct(eventFields).annotations({ identifier: "Event" })
export type Event = typeof Event.Type

/** An event as the server received it. */
export const ReceivedEvent = Schema.Struct({ ...eventFields, received: Timestamp }).annotations({ identifier: "ReceivedEvent" })
export type ReceivedEvent = typeof ReceivedEvent.Type

export const EventPage = Schema.Struct({
  events: Schema.Array(ReceivedEvent),
  total: Schema.Int,
  next_page: Schema.NullOr(Schema.String)
}).annotations({ identifier: "EventPage" })

export const EventCount = Schema.Struct({
  value: Schema.String,
  label: Schema.String,
  count: Schema.Int,
  start_time: Timestamp,
  end_time: Timestamp
}).annotations({ identifier: "EventCount" })
export type EventCount = typeof EventCount.Type

export const resourceId = (resource: Resource) => resource[RESOURCE_ID]!
export const resourceRole = (resource: Resource) => resource[RESOURCE_ROLE] ?? ""
