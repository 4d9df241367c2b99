/**
 * Delivering background task runs to task workers. A background task run (`task.delay()`: a task
 * run in a deferred Scheduled state) is queued under its task key in the database by the
 * transaction that schedules it (orchestration/repo.ts). Each subscribed socket claims the next run
 * of its keys (a retry before a scheduled one), sends it and waits for the worker's `ack`; a run
 * sent but not acknowledged goes back to its key's retry queue, and one whose socket's process died
 * is claimed again once its claim runs out. Sockets wake when a run is queued: in this process once
 * the scheduling transaction commits, in the others through `NOTIFY baton_task_runs`; they also look
 * every LOOK_ANYWAY.
 */
import { SqlClient } from "@effect/sql"
import type { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Queue } from "effect"
import * as Notifications from "../database/notifications.ts"
import { now } from "../domain/time.ts"
import { makeWakeups } from "../domain/wakeups.ts"
import { emptyStateDetails } from "../domain/states.ts"
import { onlyWhile } from "../orchestration/engine.ts"
import { Orchestrator } from "../orchestration/orchestrator.ts"
import { minimalTaskPolicy } from "../orchestration/task-policy.ts"
import { Transitions } from "../orchestration/transitions.ts"
import { loop } from "../services/runner.ts"
import { Settings } from "../settings/settings.ts"
import { TaskWorkersRepo } from "./repo.ts"

export const TASK_RUNS_CHANNEL = "baton_task_runs"

/** A stalled run is rescheduled only while it is still Pending (read under its row lock). */
const stillPending = [onlyWhile("StillPending", (initial) => initial?.type === "PENDING"), ...minimalTaskPolicy]

/** How long a socket holds a run it sent before another may deliver it (its process died). */
export const CLAIM = Duration.seconds(30)
/** How long a socket waits for a wake before looking anyway. */
const LOOK_ANYWAY = Duration.seconds(2)
/** How often a connected worker's timestamp is refreshed, and how long one unrefreshed counts as live. */
export const WORKER_REFRESH = Duration.seconds(5)
export const WORKER_LIVE = Duration.seconds(30)

export class TaskRunDeliveries extends Effect.Service<TaskRunDeliveries>()("baton/TaskRunDeliveries", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const repo = yield* TaskWorkersRepo
    const orchestrator = yield* Orchestrator
    const database = yield* Effect.context<SqlClient.SqlClient | PgClient.PgClient>()
    const shared = yield* Notifications.sharedOrWarn("background task runs are announced in this process only")
    const instance = crypto.randomUUID()

    // The sockets of this process: woken when a run was queued (or after LOOK_ANYWAY).
    const { wakeAll: wakeLocal, watch } = makeWakeups(LOOK_ANYWAY)

    // Background task runs this process scheduled: its sockets wake, and the other processes hear it.
    const queued = yield* Queue.dropping<void>(1)
    yield* (yield* Transitions).listen((t) => {
      if (t.kind === "task_run" && t.validated_state.type === "SCHEDULED" && t.validated_state.state_details.deferred === true) {
        queued.unsafeOffer(undefined)
      }
    })
    const fromTransitions = Effect.zipRight(
      Queue.take(queued),
      Effect.zipRight(
        wakeLocal,
        shared ? Notifications.notify(TASK_RUNS_CHANNEL, JSON.stringify({ from: instance })).pipe(Effect.provide(database)) : Effect.void
      )
    )
    yield* Effect.forkScoped(loop({ name: "task runs", loop: "queued", tick: fromTransitions }, Duration.zero))
    if (shared) {
      const listen = Notifications.listen({
        channel: TASK_RUNS_CHANNEL,
        heartbeatSeconds: settings.server.services.triggers.pg_notify_heartbeat_interval_seconds,
        onPayload: (payload) => (Notifications.fromOthers(payload, instance) === undefined ? Effect.void : wakeLocal)
      }).pipe(Effect.provide(database))
      const reconnect = Duration.seconds(settings.server.services.triggers.pg_notify_reconnect_interval_seconds)
      yield* Effect.forkScoped(loop({ name: "task runs", loop: "listen", tick: listen }, reconnect))
    }

    const sizes = settings.server.tasks.scheduling
    const pendingTimeout = Duration.toMillis(sizes.pending_task_timeout)

    // What was scheduled before this server queued background runs, or while the database was
    // away, is queued at start (every process may do it: a run is queued once).
    yield* repo.refill(null, sizes.max_scheduled_queue_size).pipe(
      Effect.tap((restored) => (restored > 0 ? Effect.logInfo(`Restored ${restored} background task runs to their queues`) : Effect.void)),
      Effect.catchAllCause((cause) => Effect.logWarning("Could not restore the background task runs still scheduled", cause))
    )

    /**
     * Background runs of `keys` Pending for longer than pending_task_timeout (a worker took them and
     * never ran them) become Scheduled again, and so are queued for another worker; each only while
     * it is still Pending. How many.
     */
    const rescheduleStalled = (keys: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        if (pendingTimeout <= 0) return 0
        const at = yield* now
        const stalled = yield* repo.stalled(keys, new Date(at.getTime() - pendingTimeout), 100)
        for (const id of stalled) {
          const scheduled = { type: "SCHEDULED" as const, name: null, message: "Rescheduled: pending longer than the pending task timeout", data: null, state_details: { ...emptyStateDetails, deferred: true } }
          yield* orchestrator.setTaskRunState(id, scheduled, true, stillPending).pipe(
            Effect.catchAllCause((cause) => Effect.logWarning(`Could not reschedule background task run ${id}`, cause))
          )
        }
        return stalled.length
      })

    /**
     * Claims the next run of `keys` for CLAIM; its id. With none queued, stalled Pending runs are
     * rescheduled and runs a full queue turned away are queued, and the claim tried once more.
     */
    const claim = (keys: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const once = Effect.flatMap(now, (at) => repo.claim(keys, at, new Date(at.getTime() + Duration.toMillis(CLAIM))))
        const claimed = yield* once
        if (claimed !== undefined) return claimed
        const more = (yield* rescheduleStalled(keys)) + (yield* repo.refill(keys, sizes.max_scheduled_queue_size))
        return more > 0 ? yield* once : undefined
      })

    /** The run goes back to its key's retry queue, and the sockets here look again. */
    const giveBack = (taskRunId: string) => Effect.zipRight(repo.giveBack(taskRunId), wakeLocal)

    const observe = (identifier: string, keys: ReadonlyArray<string>) => Effect.flatMap(now, (at) => repo.observe(identifier, keys, at))

    /** The workers seen within WORKER_LIVE (serving one of `keys`, when given). */
    const workers = (keys: ReadonlyArray<string> | null) =>
      Effect.flatMap(now, (at) =>
        Effect.zipRight(
          repo.prune(new Date(at.getTime() - 24 * 3600 * 1000)),
          repo.live({ since: new Date(at.getTime() - Duration.toMillis(WORKER_LIVE)), keys })
        ))

    /** The worker acknowledged the run: not delivered again while it stays Scheduled. */
    const delivered = (taskRunId: string) => Effect.flatMap(now, (at) => repo.delivered(taskRunId, at))

    return { watch, claim, delivered, drop: repo.drop, giveBack, observe, forget: repo.forget, workers } as const
  }),
  dependencies: [TaskWorkersRepo.Default, Transitions.Default, Orchestrator.Default]
}) {}
