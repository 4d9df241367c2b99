/**
 * What a trigger firing produces: the Firing (which trigger, when, for which for_each labels, on
 * which event, and for composites the child firings behind it), the automation state change event
 * (`prefect.automation.triggered` / `.resolved`), and one TriggeredAction per action to take.
 */
import type { Event, ReceivedEvent } from "../events/schemas.ts"
import { labelMatches, resourceMatches } from "../events/filter.ts"
import type { ResourceSpecification } from "../events/filter.ts"
import type { Action, Automation, EventTrigger, Trigger } from "./schemas.ts"

export type TriggerState = "Triggered" | "Resolved"

export interface Firing {
  readonly id: string
  readonly trigger: Trigger
  readonly trigger_states: ReadonlyArray<TriggerState>
  readonly triggered: Date
  readonly triggering_labels: Readonly<Record<string, string>>
  readonly triggering_firings: ReadonlyArray<Firing>
  readonly triggering_event: ReceivedEvent | null
}

export interface TriggeredAction {
  readonly id: string
  readonly automation: Automation
  readonly firing: Firing
  readonly triggered: Date
  readonly triggering_labels: Readonly<Record<string, string>>
  readonly triggering_event: ReceivedEvent | null
  readonly action: Action
  readonly action_index: number
  readonly automation_triggered_event_id: string | null
}

/** A child firing read back from its JSON: its dates as Dates again. */
export const reviveFiring = (json: any): Firing => ({
  ...json,
  triggered: new Date(json.triggered),
  triggering_event: json.triggering_event
    ? { ...json.triggering_event, occurred: new Date(json.triggering_event.occurred), received: new Date(json.triggering_event.received) }
    : null,
  triggering_firings: (json.triggering_firings ?? []).map(reviveFiring)
})

/** Every firing behind this one, itself first. */
export const allFirings = (firing: Firing): Array<Firing> => [firing, ...firing.triggering_firings.flatMap(allFirings)]

/** Every event behind this firing. */
export const allEvents = (firing: Firing): Array<ReceivedEvent> =>
  allFirings(firing).flatMap((f) => (f.triggering_event ? [f.triggering_event] : []))

// ----------------------------------------------------------------------------------------------
// Event triggers against events

const specIncludes = (spec: ResourceSpecification, resources: ReadonlyArray<Record<string, string>>) =>
  Object.keys(spec).length === 0 || resources.some((resource) => resourceMatches(spec, resource))

/** The trigger's `match` holds for the event's resource and each `match_related` for one related resource. */
export const coversResources = (trigger: EventTrigger, event: ReceivedEvent) => {
  if (!specIncludes(trigger.match, [event.resource])) return false
  const related = Array.isArray(trigger.match_related) ? trigger.match_related : [trigger.match_related as ResourceSpecification]
  return related.every((spec) => specIncludes(spec, event.related))
}

const anyName = (patterns: ReadonlyArray<string>, name: string) => patterns.some((pattern) => labelMatches(pattern, name))

/** Whether the trigger cares about the event at all: its name is expected (or starts the trigger) and the resources match. */
export const covers = (trigger: EventTrigger, event: ReceivedEvent) =>
  (trigger.expect.length === 0 || anyName([...trigger.expect, ...trigger.after], event.event)) && coversResources(trigger, event)

export const startsAfter = (trigger: EventTrigger, name: string) => trigger.after.length > 0 && anyName(trigger.after, name)
export const expects = (trigger: EventTrigger, name: string) => trigger.expect.length === 0 || anyName(trigger.expect, name)

/** A label of the event's resource, or with `related:<role>:<label>` of its first related resource in that role. */
export const findResourceLabel = (event: ReceivedEvent, label: string): string | undefined => {
  const cut = label.lastIndexOf(":")
  if (cut >= 0) {
    const directive = label.slice(0, cut)
    const relatedLabel = label.slice(cut + 1)
    const [kind, ...role] = directive.split(":")
    if (kind === "related") {
      const found = event.related.find((r) => r["prefect.resource.role"] === role.join(":"))
      return found?.[relatedLabel]
    }
  }
  return event.resource[label]
}

/** The values of the trigger's for_each labels (sorted by label) on the event: its bucket. */
export const bucketingKey = (trigger: EventTrigger, event: ReceivedEvent): Array<string> =>
  [...trigger.for_each].sort().map((label) => findResourceLabel(event, label) ?? "")

export const meetsThreshold = (trigger: EventTrigger, count: number) =>
  trigger.posture === "Reactive" ? count >= trigger.threshold : count < trigger.threshold

/** How many child firings a composite trigger needs. */
export const expectedFirings = (trigger: Trigger) =>
  trigger.type === "compound"
    ? trigger.require === "any" ? 1 : trigger.require === "all" ? trigger.triggers.length : trigger.require
    : trigger.type === "sequence"
    ? trigger.triggers.length
    : 1

/** Whether the child firings collected satisfy the composite trigger. */
export const readyToFire = (trigger: Trigger, firings: ReadonlyArray<{ readonly triggerId: string; readonly triggered: Date }>) => {
  if (trigger.type === "compound") return firings.length >= expectedFirings(trigger)
  if (trigger.type !== "sequence") return true
  const expected = trigger.triggers.map((t) => t.id)
  // Firings at the same instant count as in order.
  const order = [...firings]
    .sort((a, b) => a.triggered.getTime() - b.triggered.getTime() || expected.indexOf(a.triggerId) - expected.indexOf(b.triggerId))
    .map((f) => f.triggerId)
  return order.length === expected.length && order.every((id, i) => id === expected[i])
}

// ----------------------------------------------------------------------------------------------
// Events and actions of a firing

/** The JSON form of an event, as payloads and templates see it. */
export const eventJson = (event: ReceivedEvent) => JSON.parse(JSON.stringify(event)) as Record<string, unknown>

/** `prefect.automation.triggered` or `.resolved` for the automation whose trigger fired. */
export const stateChangeEvent = (automation: Automation, firing: Firing, state: TriggerState, id: string): Event => {
  const resource: Record<string, string> = {
    "prefect.resource.id": `prefect.automation.${automation.id}`,
    "prefect.resource.name": automation.name
  }
  if (firing.trigger.type === "event") resource["prefect.posture"] = firing.trigger.posture
  const triggering = firing.triggering_event
  return {
    id,
    occurred: firing.triggered,
    event: `prefect.automation.${state.toLowerCase()}`,
    resource,
    related: triggering ? [{ "prefect.resource.id": `prefect.event.${triggering.id}`, "prefect.resource.role": "triggering-event" }] : [],
    payload: { triggering_labels: firing.triggering_labels, triggering_event: triggering ? eventJson(triggering) : null },
    follows: null
  }
}
