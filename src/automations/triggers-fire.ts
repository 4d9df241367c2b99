/**
 * What the triggers engine does when a trigger fires: an automation's own trigger emits the
 * automation's state change events and queues its actions; a trigger inside a compound or sequence
 * trigger is kept as a child firing until enough children (in order, for a sequence) have fired
 * within the parent's window, and then the parent fires.
 */
import { Effect } from "effect"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import type { ReceivedEvent } from "../events/schemas.ts"
import { Events } from "../events/service.ts"
import { AutomationActions } from "./actions.ts"
import { BucketsRepo } from "./buckets-repo.ts"
import { expectedFirings, type Firing, readyToFire, reviveFiring, stateChangeEvent, type TriggeredAction, type TriggerState } from "./firing.ts"
import type { Automation, CompositeTrigger } from "./schemas.ts"
import type { TriggerIndex } from "./triggers-index.ts"

export const makeFire = (index: TriggerIndex) =>
  Effect.gen(function* () {
    const events = yield* Events
    const actions = yield* AutomationActions
    const buckets = yield* BucketsRepo

    /** The automation's state change events, then its actions for those states, queued for the actions service. */
    const act = (firing: Firing, automation: Automation) =>
      Effect.gen(function* () {
        const stateEvents = new Map<TriggerState, ReceivedEvent>()
        for (const state of (["Triggered", "Resolved"] as const).filter((s) => firing.trigger_states.includes(s))) {
          const [emitted] = yield* events.emit([stateChangeEvent(automation, firing, state, yield* newId)])
          stateEvents.set(state, emitted!)
        }
        const primary = stateEvents.get("Triggered") ?? stateEvents.get("Resolved")
        const sources: Array<[ReceivedEvent | null, Automation["actions"][number], string | null]> = []
        const triggered = stateEvents.get("Triggered")
        if (triggered) {
          for (const action of automation.actions) sources.push([firing.triggering_event, action, primary?.id ?? null])
          for (const action of automation.actions_on_trigger) sources.push([triggered, action, triggered.id])
        }
        const resolved = stateEvents.get("Resolved")
        if (resolved) for (const action of automation.actions_on_resolve) sources.push([resolved, action, resolved.id])
        const triggeredActions: Array<TriggeredAction> = []
        for (const [index, [event, action, stateEventId]] of sources.entries()) {
          triggeredActions.push({
            id: yield* newId,
            automation,
            firing,
            triggered: firing.triggered,
            triggering_labels: firing.triggering_labels,
            triggering_event: event,
            action,
            action_index: index,
            automation_triggered_event_id: stateEventId
          })
        }
        // Stored with the firing (the log consumer's transaction): a rolled back one leaves none.
        yield* actions.enqueue(triggeredActions)
      })

    const fire = (firing: Firing): Effect.Effect<void, unknown> =>
      Effect.gen(function* () {
        const entry = index.loaded.get(firing.trigger.id)
        if (entry === undefined) return
        if (entry.parent === undefined) return yield* act(firing, entry.automation)
        return yield* evaluateComposite(firing, entry.parent, entry.automation)
      })

    const parentFiring = (parent: CompositeTrigger, children: ReadonlyArray<Firing>, latest: Firing) =>
      Effect.gen(function* () {
        return {
          id: yield* newId,
          trigger: parent,
          trigger_states: ["Triggered"],
          triggered: yield* now,
          triggering_labels: {},
          triggering_firings: children,
          triggering_event: latest.triggering_event
        } satisfies Firing
      })

    /** A child of a compound or sequence trigger fired: fire the parent once enough children have. */
    const evaluateComposite = (firing: Firing, parent: CompositeTrigger, automation: Automation): Effect.Effect<void, unknown> =>
      Effect.gen(function* () {
        if (firing.trigger_states.includes("Resolved") && !firing.trigger_states.includes("Triggered")) return
        if (expectedFirings(parent) === 1) return yield* fire(yield* parentFiring(parent, [firing], firing))
        yield* buckets.lockComposite(parent.id)
        if (parent.within !== null) {
          yield* buckets.clearOldChildFirings(automation.id, parent.id, new Date(firing.triggered.getTime() - parent.within * 1000))
        }
        yield* buckets.upsertChildFiring(automation.id, parent.id, firing.trigger.id, firing.id, firing.triggered, firing)
        const stored = yield* buckets.childFirings(automation.id, parent.id)
        if (!stored.some((f) => f.child_firing_id === firing.id)) return
        const collected = stored.map((f) => ({ triggerId: f.child_trigger_id, triggered: f.child_fired_at }))
        if (!readyToFire(parent, collected)) return
        const ids = stored.map((f) => f.child_firing_id)
        const claimed = yield* buckets.claimChildFirings(automation.id, parent.id, ids)
        if (claimed.length !== ids.length) return
        const children = stored.map((f) => reviveFiring(f.child_firing))
        yield* fire(yield* parentFiring(parent, children, firing))
      })

    return fire
  })

export type Fire = Effect.Effect.Success<ReturnType<typeof makeFire>>
