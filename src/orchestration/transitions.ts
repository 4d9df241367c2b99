/**
 * The seam for events: every committed state transition is published here, in process (held worker
 * polls and the event relay listen). The transaction that stores a state also stores a note of it in
 * the event outbox (`transitionNote`), from which the events area makes the transition's event: a
 * process killed after the commit loses no event.
 */
import { Effect, Queue } from "effect"
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
  sync: () => {
    const listeners = new Set<(transition: StateTransition) => void>()
    /**
     * Calls `listener` with every transition committed from now on, for the scope's life. It runs in
     * the committing fiber and must not block: it picks what concerns it and signals its own loop
     * (a loop per transition, for every listener, would cost every transition that much more).
     */
    const listen = (listener: (transition: StateTransition) => void) =>
      Effect.asVoid(Effect.acquireRelease(
        Effect.sync(() => listeners.add(listener)),
        () => Effect.sync(() => void listeners.delete(listener))
      ))
    return {
      publish: (transition: StateTransition) =>
        Effect.sync(() => {
          for (const listener of listeners) {
            try {
              listener(transition)
            } catch {
              // A listener's fault is its own: the transition has committed, and the others still hear it.
            }
          }
        }),
      listen,
      /** Every transition committed from now on, in a queue (sliding: a slow reader loses the oldest). */
      subscribe: Effect.gen(function* () {
        const queue = yield* Effect.acquireRelease(Queue.sliding<StateTransition>(10_000), Queue.shutdown)
        yield* listen((transition) => void queue.unsafeOffer(transition))
        return queue as Queue.Dequeue<StateTransition>
      })
    }
  }
}) {}
