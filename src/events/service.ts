/**
 * Receiving events: each checked against the server.events limits (name length, labels per
 * resource, related resources, size); one event out of bounds refuses the whole batch (422, nothing
 * published). Accepted events are stamped `received` and published on the bus, from which the
 * persister writes them into the event log. The server's own events go into the log directly, in
 * the transaction of the write they tell of.
 */
import { Effect } from "effect"
import { now } from "../domain/time.ts"
import { type ValidationDetailItem } from "../domain/problems.ts"
import { ValidationError } from "../domain/errors.ts"
import { valueErrorItem } from "../domain/problems.ts"
import { Metrics } from "../http/metrics-registry.ts"
import { Settings } from "../settings/settings.ts"
import { EventBus } from "./bus.ts"
import { EventLog } from "./log.ts"
import type { Event, ReceivedEvent } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

/**
 * The most bytes an event takes serialised as received (what the size limit measures), when the
 * JSON text it was decoded from took at most `textBytes` bytes of UTF-8. Decoding drops what
 * serialising does not bring back (whitespace, unknown fields, escapes: a string never serialises
 * longer than it was written); only a number can grow, from 4 characters to at most 21 (`1e20`);
 * the defaults of missing fields, `received` and a normalised `occurred` add under 200 bytes.
 */
export const serialisedAtMost = (textBytes: number) => 6 * textBytes + 1024

export class Events extends Effect.Service<Events>()("baton/Events", {
  effect: Effect.gen(function* () {
    const settings = yield* Settings
    const bus = yield* EventBus
    const log = yield* EventLog
    const metrics = yield* Metrics
    const limits = settings.server.events

    /**
     * Adds the problems of one event to `found`, located under `loc` (made only for a problem).
     * `textBytes`, when known, bounds the size of the text the event came in: an event that cannot
     * be over the size limit is not serialised to measure it.
     */
    const addProblems = (
      found: Array<ValidationDetailItem>,
      event: Event,
      received: Date,
      loc: () => ReadonlyArray<string | number>,
      textBytes: number | undefined
    ) => {
      const problem = (at: ReadonlyArray<string | number>, message: string, input: unknown) =>
        found.push(valueErrorItem([...loc(), ...at], message, input))
      if (event.event.length > limits.maximum_event_name_length) {
        problem(["event"], `Event name must be at most ${limits.maximum_event_name_length} characters`, event.event)
      }
      const tooManyLabels = `The maximum number of labels per resource is ${limits.maximum_labels_per_resource}`
      if (Object.keys(event.resource).length > limits.maximum_labels_per_resource) problem(["resource"], tooManyLabels, event.resource)
      for (let j = 0; j < event.related.length; j++) {
        const related = event.related[j]!
        if (Object.keys(related).length > limits.maximum_labels_per_resource) problem(["related", j], tooManyLabels, related)
      }
      if (event.related.length > limits.maximum_related_resources) {
        problem(["related"], `The maximum number of related resources is ${limits.maximum_related_resources}`, event.related.length)
      }
      if (textBytes !== undefined && serialisedAtMost(textBytes) <= limits.maximum_size_bytes) return
      const size = Buffer.byteLength(JSON.stringify({ ...event, received }))
      if (size > limits.maximum_size_bytes) {
        problem([], `The event is ${size} bytes; events may be at most ${limits.maximum_size_bytes} bytes`, event.id)
      }
    }

    const stamp = (events: ReadonlyArray<Event>) =>
      Effect.map(now, (received): Array<ReceivedEvent> => events.map((event) => ({ ...event, received })))

    /**
     * Writes the server's own events (within the limits by construction) into the log as received
     * now, in the current transaction when there is one: they commit with the write they tell of.
     */
    const emit = (events: ReadonlyArray<Event>) => Effect.tap(stamp(events), (stamped) => log.write(stamped))

    /**
     * Checks every event against the limits, then publishes them all as received now. `textBytes`,
     * when known, bounds the UTF-8 bytes of the JSON text each event came in (a websocket message,
     * a request body).
     */
    const receive = traced("Events.receive")(function* (
      events: ReadonlyArray<Event>,
      loc: ReadonlyArray<string | number> = ["body"],
      textBytes?: (index: number) => number
    ) {
      const received = yield* now
      const found: Array<ValidationDetailItem> = []
      for (let i = 0; i < events.length; i++) {
        addProblems(found, events[i]!, received, () => [...loc, i], textBytes?.(i))
      }
      if (found.length > 0) return yield* new ValidationError({ detail: found })
      const stamped = events.map((event): ReceivedEvent => ({ ...event, received }))
      const published = yield* bus.publish(stamped)
      yield* metrics.eventsReceived(stamped.length)
      // Live subscribers here see them at once; the persister writes them into the log for the rest.
      yield* log.receivedHere(published)
      return stamped
    })

    return { receive, emit } as const
  }),
  dependencies: [EventBus.Default, EventLog.Default, Metrics.Default]
}) {}
