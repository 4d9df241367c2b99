/**
 * The seam for events: every committed state transition is published here, in process (held worker
 * polls and the event relay listen). The transaction that stores a state also stores a note of it in
 * the event outbox (`transitionNote`), from which the events area makes the transition's event: a
 * process killed after the commit loses no event.
 */
import { Effect, PubSub } from "effect"
import type { State, StateType } from "../domain/states.ts"

export interface StateTransition {
  readonly kind: "flow_run" | "task_run"
  readonly run_id: string
  readonly initial_state: State | null
  readonly validated_state: State
  /** A flow run's work queue (when it has one), so listeners can tell where a run went Scheduled. */
  readonly work_queue_id?: string | null
}

/** Longer state messages are cut in a note (and its event), so one cannot grow without bound. */
export const MAX_NOTED_MESSAGE = 100_000

/** What an event says of a state. */
export interface NotedState {
  readonly id: string
  readonly type: StateType
  readonly name: string | null
  readonly message: string | null
  readonly timestamp: string
  readonly pause_reschedule: boolean | null
}

/** A transition as the outbox keeps it (JSON), with the run's run count after it. */
export interface TransitionNote {
  readonly type: "transition"
  readonly kind: StateTransition["kind"]
  readonly run_id: string
  readonly run_count: number
  readonly initial_state: NotedState | null
  readonly validated_state: NotedState
}

const noted = (state: State): NotedState => ({
  id: state.id,
  type: state.type,
  name: state.name,
  message: state.message === null || state.message.length <= MAX_NOTED_MESSAGE ? state.message : `${state.message.slice(0, MAX_NOTED_MESSAGE)}...`,
  timestamp: state.timestamp.toISOString(),
  pause_reschedule: state.state_details.pause_reschedule ?? null
})

/** The outbox note of a transition. */
export const transitionNote = (
  kind: StateTransition["kind"],
  runId: string,
  runCount: number,
  initial: State | null,
  validated: State
): TransitionNote => ({
  type: "transition",
  kind,
  run_id: runId,
  run_count: runCount,
  initial_state: initial === null ? null : noted(initial),
  validated_state: noted(validated)
})

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
