/**
 * The task run recorder: task runs orchestrated by the client (their events carry
 * `"prefect.orchestration": "client"`) are recorded from their `prefect.task-run.*` events, so the
 * server shows them as if they had been orchestrated through the API. Events are written in
 * batches of `batch_size`, at the latest `flush_interval` after they arrive; a failed batch is
 * retried (max 5 times, `flush_interval` apart, so a database away for a moment loses nothing; at
 * shutdown 100 ms apart) and then dropped with an error in the log.
 */
import { Chunk, Duration, Effect, Layer, Option, Queue, Schedule } from "effect"
import { unavailabilityAsFailure } from "../database/errors.ts"
import { isObject } from "../domain/schemas.ts"
import { EventBus } from "../events/bus.ts"
import type { ReceivedEvent } from "../events/schemas.ts"
import { safeCause } from "../http/log-safe.ts"
import { Settings } from "../settings/settings.ts"
import { defineService, registerServices } from "../services/runner.ts"
import { type RecordedTaskRun, TaskRunRecorderRepo } from "./recorder-repo.ts"

const MAX_RETRIES = 5

const objectIdOf = (resourceId: string | undefined, kind: string) =>
  resourceId !== undefined && resourceId.startsWith(`${kind}.`) ? resourceId.slice(kind.length + 1) : null

const text = (value: unknown) => (typeof value === "string" ? value : null)
const number = (value: unknown, fallback: number) => (typeof value === "number" ? value : fallback)

/** Whether the event is a client-orchestrated task run's state change. */
export const isClientTaskRunEvent = (event: ReceivedEvent) =>
  event.event.startsWith("prefect.task-run.") && event.resource["prefect.orchestration"] === "client"

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
    const settings = yield* Settings
    const bus = yield* EventBus
    const repo = yield* TaskRunRecorderRepo
    const options = settings.server.services.task_run_recorder
    const { events: queue, ack, start } = yield* bus.consume("task-run-recorder", options.read_batch_size)

    const retries: Record<"spaced" | "briefly", Schedule.Schedule<unknown>> = {
      spaced: Schedule.recurs(MAX_RETRIES).pipe(Schedule.intersect(Schedule.spaced(Duration.seconds(options.flush_interval)))),
      briefly: Schedule.recurs(MAX_RETRIES).pipe(Schedule.intersect(Schedule.spaced("100 millis")))
    }

    const record = (events: ReadonlyArray<ReceivedEvent>, retry: keyof typeof retries) => {
      const runs = events.filter(isClientTaskRunEvent).flatMap((e) => taskRunFromEvent(e) ?? [])
      const recorded = runs.length === 0
        ? Effect.void
        : unavailabilityAsFailure(repo.record(runs)).pipe(
          Effect.retry(retries[retry]),
          Effect.catchAllCause((cause) => Effect.logError(`Dropped ${runs.length} task run events that could not be recorded`, safeCause(cause)))
        )
      return Effect.zipRight(recorded, ack(events))
    }

    /** Records everything queued now, a batch at a time. */
    const drainWith = (retry: keyof typeof retries) => Effect.gen(function* () {
      yield* start
      while (true) {
        const batch = Chunk.toReadonlyArray(yield* Queue.takeUpTo(queue, Math.max(options.batch_size, 100)))
        if (batch.length === 0) return
        yield* record(batch, retry)
      }
    })
    const drain = drainWith("briefly")

    /** One iteration: waits up to flush_interval for a first event, then records all that is queued. */
    const tick = Effect.gen(function* () {
      yield* start
      const first = yield* Queue.take(queue).pipe(Effect.timeoutOption(Duration.seconds(options.flush_interval)))
      if (Option.isNone(first)) return
      yield* record([first.value], "spaced")
      yield* drainWith("spaced")
    })

    yield* Effect.addFinalizer(() => drain)

    return { tick, drain } as const
  }),
  dependencies: [EventBus.Default, TaskRunRecorderRepo.Default]
}) {}

export const TaskRunRecorderService = registerServices(
  defineService({
    name: "task_run_recorder",
    // An iteration itself waits (up to flush_interval) for task run events to record.
    interval: () => Duration.zero,
    tick: Effect.flatMap(TaskRunRecorder, (recorder) => recorder.tick)
  })
).pipe(Layer.provide(TaskRunRecorder.Default))
