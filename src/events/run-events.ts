/**
 * The server's own events for run state changes: every committed transition (from the
 * orchestration seam) becomes `prefect.flow-run.<state name>` or `prefect.task-run.<state name>`,
 * with the run as its resource, what the run belongs to as related resources, and the states in
 * its payload. The event's id is the new state's id; `follows` is the previous state's when it came
 * within five minutes, so consumers can order close transitions.
 */
import { Chunk, Effect, Layer, Queue } from "effect"
import type { State } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { type StateTransition, Transitions } from "../orchestration/transitions.ts"
import { EventBus } from "./bus.ts"
import type { RunContext } from "./run-resources-repo.ts"
import { RunResourcesRepo } from "./run-resources-repo.ts"
import type { ReceivedEvent } from "./schemas.ts"

/** Longer state messages are cut, so one event cannot grow without bound. */
const MAX_STATE_MESSAGE = 100_000
const TIGHT_TIMING_MS = 5 * 60 * 1000

const truncated = (text: string | null | undefined) =>
  text === null || text === undefined ? text : text.length > MAX_STATE_MESSAGE ? `${text.slice(0, MAX_STATE_MESSAGE)}...` : text

/** The essential strings of a state, for an event's payload. */
export const statePayload = (state: State | null): Record<string, string> | null => {
  if (state === null) return null
  const payload: Record<string, string> = { type: state.type }
  if (state.name) payload.name = state.name
  if (state.message) payload.message = truncated(state.message)!
  if (state.type === "PAUSED") payload.pause_reschedule = String(state.state_details.pause_reschedule)
  return payload
}

/** Related resources: the run's flow run (for task runs), flow, deployment, queue, pool, parent task run, then tags. */
export const relatedResources = (context: RunContext): Array<Record<string, string>> => {
  const related: Array<Record<string, string>> = []
  const add = (kind: string, id: string | null, name: string | null, extra: Record<string, string> = {}) => {
    if (id !== null) related.push({ "prefect.resource.id": `prefect.${kind}.${id}`, "prefect.resource.role": kind, "prefect.resource.name": name ?? "", ...extra })
  }
  add("flow-run", context.flow_run_id, context.flow_run_name)
  add("flow", context.flow_id, context.flow_name)
  add("deployment", context.deployment_id, context.deployment_name)
  add("work-queue", context.work_queue_id, context.work_queue_name)
  add("work-pool", context.work_pool_id, context.work_pool_name, context.work_pool_type ? { "prefect.work-pool.type": context.work_pool_type } : {})
  add("task-run", context.task_run_id, context.task_run_name)
  const tags = new Set<string>([
    ...context.tags,
    ...(context.flow_run_tags ?? []),
    ...(context.flow_tags ?? []),
    ...(context.deployment_tags ?? []),
    ...(context.task_run_tags ?? [])
  ])
  for (const tag of [...tags].sort()) related.push({ "prefect.resource.id": `prefect.tag.${tag}`, "prefect.resource.role": "tag" })
  const creator = context.created_by
  if (creator?.id && (creator.type === "DEPLOYMENT" || creator.type === "AUTOMATION")) {
    related.push({
      "prefect.resource.id": `prefect.${creator.type === "DEPLOYMENT" ? "deployment" : "automation"}.${creator.id}`,
      "prefect.resource.role": "creator",
      ...(creator.display_value ? { "prefect.resource.name": creator.display_value } : {})
    })
  }
  return related
}

/** The event of one committed transition. */
export const stateChangeEvent = (transition: StateTransition, context: RunContext, received: Date): ReceivedEvent => {
  const kind = transition.kind === "flow_run" ? "flow-run" : "task-run"
  const { initial_state: initial, validated_state: validated } = transition
  const occurred = validated.timestamp
  const tight = initial !== null && Math.abs(occurred.getTime() - initial.timestamp.getTime()) < TIGHT_TIMING_MS
  const resource: Record<string, string> = {
    "prefect.resource.id": `prefect.${kind}.${transition.run_id}`,
    "prefect.resource.name": context.name,
    "prefect.run-count": String(context.run_count),
    "prefect.state-name": validated.name ?? "",
    "prefect.state-timestamp": validated.timestamp.toISOString(),
    "prefect.state-type": validated.type
  }
  if (validated.message) resource["prefect.state-message"] = truncated(validated.message)!
  return {
    id: validated.id,
    occurred,
    event: `prefect.${kind}.${validated.name}`,
    resource,
    related: relatedResources(context),
    payload: {
      intended: { from: initial?.type ?? null, to: validated.type },
      initial_state: statePayload(initial),
      validated_state: statePayload(validated)
    },
    follows: tight ? initial!.id : null,
    received
  }
}

/** Turns the transitions published from now on into events on the bus, a batch at a time. */
export const RunEventsLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const transitions = yield* Transitions
    const bus = yield* EventBus
    const runs = yield* RunResourcesRepo
    const subscription = yield* transitions.subscribe
    const emitBatch = Effect.gen(function* () {
      const batch = Chunk.toReadonlyArray(yield* Queue.takeBetween(subscription, 1, 500))
      const ids = (kind: StateTransition["kind"]) => [...new Set(batch.filter((t) => t.kind === kind).map((t) => t.run_id))]
      const [flowRuns, taskRuns] = yield* Effect.all([runs.flowRuns(ids("flow_run")), runs.taskRuns(ids("task_run"))])
      const contexts = new Map([...flowRuns, ...taskRuns].map((c) => [c.id, c]))
      const received = yield* now
      const events: Array<ReceivedEvent> = []
      for (const transition of batch) {
        const context = contexts.get(transition.run_id)
        // A run deleted since its transition has nothing left to describe it.
        if (context !== undefined) events.push(stateChangeEvent(transition, context, received))
      }
      yield* bus.publish(events)
    })
    yield* emitBatch.pipe(
      Effect.catchAllCause((cause) => Effect.logError("Run state events could not be emitted", cause)),
      Effect.forever,
      Effect.forkScoped
    )
  })
).pipe(Layer.provide(Layer.mergeAll(Transitions.Default, EventBus.Default, RunResourcesRepo.Default)))
