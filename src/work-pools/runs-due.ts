/**
 * Runs becoming due to work queues, for held worker polls (`wait_seconds`). A flow run entering the
 * Scheduled state in a queue is announced here after its transaction commits: in this process the
 * polls held on that queue wake at once; other processes on the same PostgreSQL server hear it on
 * the `baton_runs_due` channel. Announcements are coalesced per queue (the earliest scheduled time
 * wins) and sent in batches: one NOTIFY carries every queue announced since the previous one, so a
 * burst of creates or a scheduler batch costs one statement, outside the requests that made them.
 *
 * They are sent only while another process listens: each process says it is there on the channel
 * (on start, every heartbeat interval, and at once to a process it had not heard), and sends its
 * announcements while it has heard another within three intervals, and in its own first three
 * intervals (a process that has just started, or just been started beside it, may not have been
 * heard yet). A process alone on its database sends none: under load they were up to 20 statements
 * a second, heard back only by itself.
 */
import type { SqlClient } from "@effect/sql"
import type { PgClient } from "@effect/sql-pg"
import { Chunk, Deferred, Duration, Effect, Queue, type Scope } from "effect"
import * as Notifications from "../database/notifications.ts"
import { realClock } from "../domain/time.ts"
import { Transitions } from "../orchestration/transitions.ts"
import { loop } from "../services/runner.ts"
import { Settings } from "../settings/settings.ts"

/** The PostgreSQL channel runs due are announced on, for the other processes. */
export const RUNS_DUE_CHANNEL = "baton_runs_due"

/** Queues per NOTIFY: each takes about 60 bytes of the 8000 a payload may have. */
const QUEUES_PER_NOTIFY = 100

/**
 * The least real time between two sends: under load at most 20 NOTIFY statements a second per
 * process, each carrying every queue announced meanwhile; an idle process sends at once. Real time
 * (not the Clock services read), since it paces the database connection, not the runs' schedule.
 */
const SEND_SPACING = Duration.millis(50)

/** A run in the Scheduled state, as far as waiting workers care: its queue and scheduled time. */
export interface RunDue {
  readonly work_queue_id: string | null
  /** Null when unknown: due whatever the poll's window. */
  readonly scheduled_time: Date | null
}

/** A held poll's view of the announcements for its queues. */
export interface Watch {
  /**
   * Waits until something was announced for one of the queues since the last look, then answers
   * the earliest scheduled time announced (epoch ms; -Infinity for a run without one) and forgets it.
   */
  readonly next: Effect.Effect<number>
  /** Forgets what was announced so far (before polling, so what comes after is not missed). */
  readonly clear: Effect.Effect<void>
}

interface Watcher {
  earliest: number
  readonly wake: Queue.Queue<void>
}

/** The earliest scheduled time per queue. */
const byQueue = (runs: Iterable<RunDue>) => {
  const due = new Map<string, number>()
  for (const run of runs) {
    if (run.work_queue_id === null) continue
    const at = run.scheduled_time === null ? -Infinity : run.scheduled_time.getTime()
    due.set(run.work_queue_id, Math.min(due.get(run.work_queue_id) ?? Infinity, at))
  }
  return due
}

export class RunsDue extends Effect.Service<RunsDue>()("baton/RunsDue", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const transitions = yield* Transitions
    const database = yield* Effect.context<SqlClient.SqlClient | PgClient.PgClient>()
    // The embedded database serves one process: the in-process signal is all there is.
    const shared = yield* Notifications.sharedOrWarn("runs due are announced in this process only")
    const instance = crypto.randomUUID()
    const watchers = new Map<string, Set<Watcher>>()
    const stopped = yield* Deferred.make<void>()

    const wakeLocalNow = (due: ReadonlyMap<string, number>) => {
      for (const [queueId, at] of due) {
        for (const watcher of watchers.get(queueId) ?? []) {
          watcher.earliest = Math.min(watcher.earliest, at)
          watcher.wake.unsafeOffer(undefined)
        }
      }
    }
    const wakeLocal = (due: ReadonlyMap<string, number>) => Effect.sync(() => wakeLocalNow(due))

    const outbox = yield* Effect.acquireRelease(Queue.unbounded<readonly [string, number]>(), Queue.shutdown)

    /** Announces committed runs in the Scheduled state: wakes this process's held polls, queues the NOTIFY. */
    const announceNow = (runs: Iterable<RunDue>) => {
      const due = byQueue(runs)
      if (due.size === 0) return
      wakeLocalNow(due)
      if (shared) for (const entry of due) outbox.unsafeOffer(entry)
    }
    const announce = (runs: Iterable<RunDue>) => Effect.sync(() => announceNow(runs))

    // Who else listens (process id → when last heard, real time), and since when this one runs.
    const heartbeatMs = settings.server.services.triggers.pg_notify_heartbeat_interval_seconds * 1000
    const forgetAfterMs = 3 * heartbeatMs
    const others = new Map<string, number>()
    const startedAt = realClock.unsafeCurrentTimeMillis()
    const presence = JSON.stringify({ from: instance, listening: true })
    const helloNow = yield* Queue.dropping<void>(1)
    /**
     * Forgets the processes not heard for `forgetAfterMs`: `others` is in the order they were last
     * heard (a process heard again goes to the end), so those are at its start.
     */
    const forgetQuiet = (at: number) => {
      for (const [id, heard] of others) {
        if (at - heard < forgetAfterMs) return
        others.delete(id)
      }
    }
    /** Whether another process may hold polls to wake (or this one has only just started). */
    const othersListen = (at: number) => {
      forgetQuiet(at)
      return others.size > 0 || at - startedAt < forgetAfterMs
    }
    /** Another process was heard: remembered, and told at once that this one listens when it is new. */
    const heard = (from: string) => {
      const at = realClock.unsafeCurrentTimeMillis()
      forgetQuiet(at)
      const known = others.delete(from)
      others.set(from, at)
      if (!known) helloNow.unsafeOffer(undefined)
    }

    /** Says this process listens: every heartbeat interval, and at once for a process it had not heard. */
    const sayPresence = Effect.gen(function* () {
      yield* Notifications.notify(RUNS_DUE_CHANNEL, presence)
      yield* Effect.raceFirst(Queue.take(helloNow), Effect.withClock(Effect.sleep(Duration.millis(heartbeatMs)), realClock))
    }).pipe(Effect.provide(database))

    /**
     * Sends what was announced since the last send, a NOTIFY per QUEUES_PER_NOTIFY queues, while
     * another process listens (else it goes: no one holds a poll it would wake).
     */
    const send = Effect.gen(function* () {
      const batch = Chunk.toReadonlyArray(yield* Queue.takeBetween(outbox, 1, 10_000))
      if (!othersListen(realClock.unsafeCurrentTimeMillis())) return
      const due = new Map<string, number>()
      for (const [queueId, at] of batch) due.set(queueId, Math.min(due.get(queueId) ?? Infinity, at))
      const entries = [...due].map(([queueId, at]) => [queueId, Number.isFinite(at) ? at : null] as const)
      for (let i = 0; i < entries.length; i += QUEUES_PER_NOTIFY) {
        const payload = JSON.stringify({ from: instance, due: Object.fromEntries(entries.slice(i, i + QUEUES_PER_NOTIFY)) })
        yield* Notifications.notify(RUNS_DUE_CHANNEL, payload)
      }
      yield* Effect.withClock(Effect.sleep(SEND_SPACING), realClock)
    }).pipe(Effect.provide(database))

    /** What another process announced: its queues' held polls here wake. */
    const onPayload = (payload: string) => {
      const data = Notifications.fromOthers(payload, instance)
      if (data !== undefined && typeof data.from === "string") heard(data.from)
      if (data === undefined || typeof data.due !== "object" || data.due === null) return Effect.void
      const due = new Map<string, number>()
      for (const [queueId, at] of Object.entries(data.due)) due.set(queueId, typeof at === "number" ? at : -Infinity)
      return wakeLocal(due)
    }

    const listen = Notifications.listen({
      channel: RUNS_DUE_CHANNEL,
      heartbeatSeconds: settings.server.services.triggers.pg_notify_heartbeat_interval_seconds,
      onPayload
    }).pipe(Effect.provide(database))

    // Flow runs stored in the Scheduled state (created so, or moved there) are announced after commit.
    yield* transitions.listen((t) => {
      if (t.kind === "flow_run" && t.validated_state.type === "SCHEDULED" && t.work_queue_id) {
        announceNow([{ work_queue_id: t.work_queue_id, scheduled_time: t.validated_state.state_details.scheduled_time }])
      }
    })
    if (shared) {
      yield* Effect.forkScoped(loop({ name: "runs due", loop: "notify", tick: send }, Duration.zero))
      yield* Effect.forkScoped(loop({ name: "runs due", loop: "presence", tick: sayPresence }, Duration.zero))
      const reconnect = Duration.seconds(settings.server.services.triggers.pg_notify_reconnect_interval_seconds)
      yield* Effect.forkScoped(loop({ name: "runs due", loop: "listen", tick: listen }, reconnect))
    }

    /** Ends every held poll (they answer at once): the API is stopping. */
    const stop = Deferred.succeed(stopped, undefined)
    yield* Effect.addFinalizer(() => stop)

    /** Announcements for `queueIds` from now until the scope closes. */
    const watch = (queueIds: ReadonlyArray<string>): Effect.Effect<Watch, never, Scope.Scope> =>
      Effect.gen(function* () {
        const watcher: Watcher = { earliest: Infinity, wake: yield* Queue.dropping<void>(1) }
        const forget = () => {
          const earliest = watcher.earliest
          watcher.earliest = Infinity
          return earliest
        }
        yield* Effect.acquireRelease(
          Effect.sync(() => {
            for (const id of queueIds) {
              const set = watchers.get(id) ?? new Set()
              set.add(watcher)
              watchers.set(id, set)
            }
          }),
          () =>
            Effect.sync(() => {
              for (const id of queueIds) {
                const set = watchers.get(id)
                set?.delete(watcher)
                if (set?.size === 0) watchers.delete(id)
              }
            })
        )
        const next: Effect.Effect<number> = Effect.suspend(() =>
          watcher.earliest !== Infinity
            ? Effect.zipRight(Queue.takeAll(watcher.wake), Effect.sync(forget))
            : Effect.zipRight(Queue.take(watcher.wake), Effect.suspend(() => (watcher.earliest === Infinity ? next : Effect.sync(forget))))
        )
        const clear = Effect.zipRight(Queue.takeAll(watcher.wake), Effect.sync(forget))
        return { next, clear: Effect.asVoid(clear) }
      })

    return {
      announce,
      watch,
      stop,
      /** Completes when held polls should end (the API is stopping). */
      stopped: Deferred.await(stopped),
      /** How many held polls watch each queue now (for tests and metrics). */
      watching: Effect.sync(() => new Map([...watchers].map(([id, set]) => [id, set.size])))
    } as const
  }),
  dependencies: [Transitions.Default]
}) {}
