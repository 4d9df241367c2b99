/**
 * The task run recorder: task runs orchestrated by the client (their events carry
 * `"prefect.orchestration": "client"`) are recorded from their `prefect.task-run.*` events, so the
 * server shows them as if they had been orchestrated through the API. It follows the event log
 * (events/log.ts) as a consumer, a batch of events per transaction.
 */
import { Duration, Effect, Layer } from "effect"
import { isObject } from "../domain/schemas.ts"
import { EventLog } from "../events/log.ts"
import type { ReceivedEvent } from "../events/schemas.ts"
import { defineService, registerServices } from "../services/runner.ts"
import { type RecordedTaskRun, TaskRunRecorderRepo } from "./recorder-repo.ts"

/** Events read (and recorded) per transaction. */
const BATCH = 500

const objectIdOf = (resourceId: string | undefined, kind: string) =>
  resourceId !== undefined && resourceId.startsWith(`${kind}.`) ? resourceId.slice(kind.length + 1) : null

const text = (value: unknown) => (typeof value === "string" ? value : null)
const number = (value: unknown, fallback: number) => (typeof value === "number" ? value : fallback)

/** The names of the events the recorder reads (the others pass it by unread). */
const TASK_RUN_EVENTS = "prefect.task-run."

/** Whether the event is a client-orchestrated task run's state change. */
export const isClientTaskRunEvent = (event: ReceivedEvent) =>
  event.event.startsWith(TASK_RUN_EVENTS) && event.resource["prefect.orchestration"] === "client"

/** The task run and its new state, as the event describes them; undefined when it does not. */
export const taskRunFromEvent = (event: ReceivedEvent): RecordedTaskRun | undefined => {
  const id = objectIdOf(event.resource["prefect.resource.id"], "prefect.task-run")
  const run = event.payload.task_run
  const state = event.payload.validated_state
  if (id === null || !isObject(run) || !isObject(state) || typeof state.type !== "string") return undefined
  const flowRun = event.related.find((r) => r["prefect.resource.role"] === "flow-run")
  const flowRunId = objectIdOf(flowRun?.["prefect.resource.id"], "prefect.flow-run")
  return {
    id,
    flow_run_id: flowRunId,
    name: text(run.name) ?? event.resource["prefect.resource.name"] ?? "",
    task_key: text(run.task_key) ?? "",
    dynamic_key: text(run.dynamic_key) ?? "",
    cache_key: text(run.cache_key),
    cache_expiration: text(run.cache_expiration),
    task_version: text(run.task_version),
    empirical_policy: isObject(run.empirical_policy) ? run.empirical_policy : {},
    tags: Array.isArray(run.tags) ? run.tags : [],
    labels: isObject(run.labels) ? run.labels : null,
    task_inputs: isObject(run.task_inputs) ? run.task_inputs : {},
    run_count: number(run.run_count, 0),
    flow_run_run_count: number(run.flow_run_run_count, 0),
    expected_start_time: text(run.expected_start_time),
    next_scheduled_start_time: text(run.next_scheduled_start_time),
    start_time: text(run.start_time),
    end_time: text(run.end_time),
    total_run_time: number(run.total_run_time, 0),
    state: {
      id: event.id,
      type: state.type,
      name: text(state.name),
      timestamp: event.occurred,
      message: text(state.message),
      data: state.data ?? null,
      state_details: isObject(state.state_details) ? state.state_details : {}
    }
  }
}

export class TaskRunRecorder extends Effect.Service<TaskRunRecorder>()("baton/TaskRunRecorder", {
  scoped: Effect.gen(function* () {
    const log = yield* EventLog
    const repo = yield* TaskRunRecorderRepo

    /** Records the client-orchestrated task runs a batch of events tells of. */
    const record = (events: ReadonlyArray<ReceivedEvent>) => {
      const runs = events.filter(isClientTaskRunEvent).flatMap((e) => taskRunFromEvent(e) ?? [])
      return runs.length === 0 ? Effect.void : repo.record(runs)
    }

    // The log's consumer "task_run_recorder": a batch is recorded in the transaction that moves the
    // cursor past it, so a failure (the database away) leaves it for the next try, and each event
    // is recorded once across every process. Only task run events are read.
    const consumer = yield* log.consumer("task_run_recorder", BATCH, record, undefined, Effect.succeed({ prefix: TASK_RUN_EVENTS }))

    return { tick: consumer.tick, drain: Effect.asVoid(consumer.drain) } as const
  }),
  dependencies: [EventLog.Default, TaskRunRecorderRepo.Default]
}) {}
export const TaskRunRecorderService = registerServices(
  defineService({
    name: "task_run_recorder",
    // An iteration itself waits for new events in the log, then records what they tell.
    interval: () => Duration.zero,
    tick: Effect.flatMap(TaskRunRecorder, (recorder) => recorder.tick)
  })
).pipe(Layer.provide(TaskRunRecorder.Default))
