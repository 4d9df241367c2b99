/**
 * The server's own events for run state changes: every committed transition (its note in the event
 * outbox) becomes `prefect.flow-run.<state name>` or `prefect.task-run.<state name>`,
 * with the run as its resource, what the run belongs to as related resources, and the states in
 * its payload. The event's id is the new state's id; `follows` is the previous state's when it came
 * within five minutes, so consumers can order close transitions.
 */
import { Effect } from "effect"
import type { NotedState, TransitionNote } from "../orchestration/transitions.ts"
import type { RunContext } from "./run-resources-repo.ts"
import { RunResourcesRepo } from "./run-resources-repo.ts"
import type { ReceivedEvent } from "./schemas.ts"

/** The essential strings of a state, for an event's payload. */
export const statePayload = (state: NotedState | null): Record<string, string> | null => {
  if (state === null) return null
  const payload: Record<string, string> = { type: state.type }
  if (state.name) payload.name = state.name
  if (state.message) payload.message = state.message
  if (state.type === "PAUSED") payload.pause_reschedule = String(state.pause_reschedule ?? false)
  return payload
}

const TIGHT_TIMING_MS = 5 * 60 * 1000

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

/** The event of one committed transition, from its outbox note. */
export const transitionEvent = (note: TransitionNote, context: RunContext, received: Date): ReceivedEvent => {
  const kind = note.kind === "flow_run" ? "flow-run" : "task-run"
  const { initial_state: initial, validated_state: validated } = note
  const occurred = new Date(validated.timestamp)
  const tight = initial !== null && Math.abs(occurred.getTime() - new Date(initial.timestamp).getTime()) < TIGHT_TIMING_MS
  const resource: Record<string, string> = {
    "prefect.resource.id": `prefect.${kind}.${note.run_id}`,
    "prefect.resource.name": context.name,
    "prefect.run-count": String(note.run_count),
    "prefect.state-name": validated.name ?? "",
    "prefect.state-timestamp": occurred.toISOString(),
    "prefect.state-type": validated.type
  }
  if (validated.message) resource["prefect.state-message"] = validated.message
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

/** The events of committed transitions, in their order (a run deleted since has nothing left to describe it, and no event). */
export const transitionEvents = (notes: ReadonlyArray<TransitionNote>, received: Date) =>
  Effect.gen(function* () {
    const runs = yield* RunResourcesRepo
    const ids = (kind: TransitionNote["kind"]) => [...new Set(notes.filter((n) => n.kind === kind).map((n) => n.run_id))]
    const [flowRuns, taskRuns] = yield* Effect.all([runs.flowRuns(ids("flow_run")), runs.taskRuns(ids("task_run"))])
    const contexts = new Map([...flowRuns, ...taskRuns].map((c) => [c.id, c]))
    return new Map(notes.flatMap((note) => {
      const context = contexts.get(note.run_id)
      return context === undefined ? [] : [[note, transitionEvent(note, context, received)] as const]
    }))
  })
