/**
 * Automation changes, announced in this process so the triggers service reloads the automation at
 * once (other replicas notice through the automation snapshot they compare periodically).
 */
import { Effect, PubSub, type Queue, type Scope } from "effect"

/** The PostgreSQL channel automation changes are announced on, for the other replicas. */
export const AUTOMATION_CHANGES_CHANNEL = "baton_automation_changes"

export interface AutomationChange {
  readonly id: string
  readonly kind: "created" | "updated" | "deleted"
}

export class AutomationChanges extends Effect.Service<AutomationChanges>()("baton/AutomationChanges", {
  scoped: Effect.gen(function* () {
    const hub = yield* Effect.acquireRelease(PubSub.unbounded<AutomationChange>(), PubSub.shutdown)
    const publish = (changes: ReadonlyArray<AutomationChange>) => Effect.asVoid(PubSub.publishAll(hub, changes))
    const subscribe: Effect.Effect<Queue.Dequeue<AutomationChange>, never, Scope.Scope> = PubSub.subscribe(hub)
    return { publish, subscribe } as const
  })
}) {}
