/**
 * The seam for events: every committed state transition is published here, in process. The events
 * area turns these into the server's events; tests and embedding programs may subscribe.
 */
import { Effect, PubSub } from "effect"
import type { State } from "../domain/states.ts"

export interface StateTransition {
  readonly kind: "flow_run" | "task_run"
  readonly run_id: string
  readonly initial_state: State | null
  readonly validated_state: State
  /** A flow run's work queue (when it has one), so listeners can tell where a run went Scheduled. */
  readonly work_queue_id?: string | null
}

export class Transitions extends Effect.Service<Transitions>()("baton/Transitions", {
  scoped: Effect.gen(function* () {
    // Sliding: a slow subscriber loses the oldest transitions rather than slowing transitions down.
    const hub = yield* Effect.acquireRelease(PubSub.sliding<StateTransition>(10_000), PubSub.shutdown)
    return {
      publish: (transition: StateTransition) => Effect.asVoid(PubSub.publish(hub, transition)),
      subscribe: PubSub.subscribe(hub)
    }
  })
}) {}
