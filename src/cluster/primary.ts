/**
 * `baton server start --workers N` (server.api.workers): a primary process forks N workers that
 * share the port through node:cluster (the primary accepts connections and hands them out in turn;
 * it serves no HTTP and opens no database). Each worker is a whole Baton server on the same
 * PostgreSQL, as replicas are (docs/scaling.md): the singleton services run in the one that holds
 * the leadership lock.
 *
 * The primary starts one worker first and the others once it serves, so migrations run once and a
 * start-up error (a database that does not answer) is printed once, after which the primary stops
 * too. A worker that dies later is started again, one second after, doubling up to a minute while
 * it keeps dying within a minute of serving. Interrupted (SIGINT, SIGTERM), the primary asks every
 * worker to stop, kills one that has not stopped within STOP_GRACE, and ends once all have exited.
 */
import cluster, { type Worker } from "node:cluster"
import { Clock, Console, Deferred, Duration, Effect, Exit, FiberSet, Ref, Schedule, Schema } from "effect"
import { type SettingsValue, usesDatabaseServer } from "../settings/settings.ts"
import { BATON_VERSION } from "../version.ts"
import { isStarted, type Started, STOP } from "./worker.ts"

export class ClusterError extends Schema.TaggedError<ClusterError>()("ClusterError", {
  message: Schema.String
}) {}

/** How a worker ended: its exit code, or the signal that ended it. */
export interface WorkerExit {
  readonly code: number | null
  readonly signal: string | null
}

/** A worker process, as the supervision sees it (a fake one in tests). */
export interface WorkerProcess {
  readonly pid: number
  /** Succeeds once the worker serves. */
  readonly started: Effect.Effect<Started>
  /** Succeeds once the worker has exited. */
  readonly exited: Effect.Effect<WorkerExit>
  /** Asks the worker to stop: it finishes what it serves and closes. Nothing once it has exited; asking again does no harm. */
  readonly stop: Effect.Effect<void>
  /** Ends the worker at once (SIGKILL). */
  readonly kill: Effect.Effect<void>
}

/** Time a worker has to stop when asked before it is killed. */
export const STOP_GRACE = Duration.seconds(30)
/** The first restart's delay, doubled for each restart of a worker that died soon after serving. */
export const RESTART_DELAY = Duration.seconds(1)
export const MAX_RESTART_DELAY = Duration.minutes(1)
/** A worker that served this long before it died is restarted after RESTART_DELAY again. */
export const STABLE_AFTER = Duration.minutes(1)

/** The delay before the `attempt`th restart in a row (1, 2, …). */
export const restartDelay = (attempt: number): Duration.Duration =>
  Duration.min(Duration.times(RESTART_DELAY, 2 ** Math.min(attempt - 1, 30)), MAX_RESTART_DELAY)

const describeExit = (exit: WorkerExit) =>
  exit.signal !== null ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`

/**
 * Refuses a number of workers the settings cannot serve, with one line saying what to change.
 * One worker is always fine: that is the plain server.
 */
export const checkWorkers = (settings: SettingsValue) =>
  Effect.gen(function* () {
    const workers = settings.server.api.workers
    if (workers === 1) return
    if (!usesDatabaseServer(settings.server.database)) {
      return yield* new ClusterError({
        message: `${workers} workers need PostgreSQL: the embedded database is served by one process, one session at a time. ` +
          "Set server.database.connection_url (docs/scaling.md), or run one worker."
      })
    }
    if (settings.server.concurrency.lease_storage === "memory") {
      return yield* new ClusterError({
        message: `${workers} workers cannot keep concurrency leases in memory (server.concurrency.lease_storage=memory): ` +
          "a client's requests reach any worker. Set it to database, the default on PostgreSQL."
      })
    }
  })

export interface SuperviseOptions {
  readonly workers: number
  /** Starts one worker. */
  readonly fork: Effect.Effect<WorkerProcess>
  /** Where the start lines go (the console). */
  readonly print?: (line: string) => Effect.Effect<void>
}

/**
 * Runs `workers` workers until interrupted, replacing those that die. Fails only when the first
 * worker exits before it serves (a start-up error, which it has printed).
 */
export const supervise = (options: SuperviseOptions) =>
  Effect.gen(function* () {
    const print = options.print ?? Console.log
    const everServed = yield* Ref.make(false)
    const firstServed = yield* Deferred.make<void>()
    const serving = yield* Ref.make(new Set<number>())
    const allServing = yield* Deferred.make<number>()

    const onStarted = (slot: number, worker: WorkerProcess, started: Started) =>
      Effect.gen(function* () {
        if (!(yield* Ref.getAndSet(everServed, true))) {
          for (const line of started.lines) yield* print(line)
          yield* Deferred.succeed(firstServed, undefined)
        } else {
          yield* Effect.logInfo(`Worker ${slot} (pid ${worker.pid}) serves`)
        }
        const now = yield* Ref.updateAndGet(serving, (set) => new Set(set).add(slot))
        if (now.size === options.workers) yield* Deferred.succeed(allServing, started.port)
      })

    /**
     * Asks `worker` to stop and waits for it to exit, killing it after STOP_GRACE. The request is
     * sent again every second: a worker still loading its modules has no listener for it yet.
     */
    const stop = (slot: number, worker: WorkerProcess) =>
      Effect.gen(function* () {
        const asking = Effect.zipRight(Effect.repeat(worker.stop, Schedule.spaced(Duration.seconds(1))), Effect.never)
        // Run as a release, this is uninterruptible, and so would be the racers without `interruptible`:
        // the race would then wait for its loser (the grace's sleep, or a worker that never exits).
        const exited = yield* Effect.raceFirst(
          Effect.interruptible(Effect.as(worker.exited, true)),
          Effect.interruptible(Effect.raceFirst(Effect.as(Effect.sleep(STOP_GRACE), false), asking))
        )
        if (exited) return
        yield* Effect.logWarning(`Worker ${slot} (pid ${worker.pid}) did not stop within ${Duration.format(STOP_GRACE)}; killing it`)
        yield* worker.kill
        yield* worker.exited
      })

    /** One worker's run, from its start to its exit: when it started serving (ms), and how it ended. */
    const runOnce = (slot: number) =>
      Effect.scoped(
        Effect.gen(function* () {
          const worker = yield* Effect.acquireRelease(options.fork, (worker) => stop(slot, worker))
          const servedAt = yield* Ref.make<number | undefined>(undefined)
          yield* worker.started.pipe(
            Effect.tap(() => Effect.flatMap(Clock.currentTimeMillis, (at) => Ref.set(servedAt, at))),
            Effect.flatMap((started) => onStarted(slot, worker, started)),
            Effect.forkScoped
          )
          const ended = yield* worker.exited
          yield* Ref.update(serving, (set) => {
            const next = new Set(set)
            next.delete(slot)
            return next
          })
          return { worker, ended, servedAt: yield* Ref.get(servedAt) }
        })
      )

    /** A slot keeps one worker running: started again after it dies, with a growing delay. */
    const slot = (slot: number) =>
      Effect.gen(function* () {
        let attempt = 0
        while (true) {
          const { ended, servedAt, worker } = yield* runOnce(slot)
          if (servedAt === undefined && !(yield* Ref.get(everServed))) {
            return yield* new ClusterError({ message: `The first worker (pid ${worker.pid}) ${describeExit(ended)} before it served.` })
          }
          const now = yield* Clock.currentTimeMillis
          const lived = servedAt === undefined ? 0 : now - servedAt
          attempt = lived >= Duration.toMillis(STABLE_AFTER) ? 1 : attempt + 1
          const delay = restartDelay(attempt)
          yield* Effect.logWarning(`Worker ${slot} (pid ${worker.pid}) ${describeExit(ended)}; starting another in ${Duration.format(delay)}`)
          yield* Effect.sleep(delay)
        }
      })

    // Closed, the set interrupts every slot at once: the workers are asked to stop together.
    const slots = yield* FiberSet.make<never, ClusterError>()
    yield* FiberSet.run(slots, slot(1))
    // The join fails when the first worker never serves; it never succeeds (a slot runs forever).
    yield* Effect.raceFirst(Deferred.await(firstServed), FiberSet.join(slots))
    for (let n = 2; n <= options.workers; n++) yield* FiberSet.run(slots, slot(n))
    const port = yield* Deferred.await(allServing)
    yield* print(`Baton ${BATON_VERSION}: ${options.workers} workers on port ${port}`)
    return yield* FiberSet.join(slots).pipe(Effect.zipRight(Effect.never))
  }).pipe(Effect.scoped)

/** Forks a worker of this program (node:cluster runs the same command line in it). */
export const forkWorker: Effect.Effect<WorkerProcess> = Effect.gen(function* () {
  const started = yield* Deferred.make<Started>()
  const exited = yield* Deferred.make<WorkerExit>()
  const worker: Worker = cluster.fork()
  worker.on("message", (message: unknown) => {
    if (isStarted(message)) Deferred.unsafeDone(started, Exit.succeed(message))
  })
  worker.once("exit", (code, signal) => Deferred.unsafeDone(exited, Exit.succeed({ code, signal })))
  // Sending to a worker that has just died fails here rather than ending the primary.
  worker.on("error", () => undefined)
  let signalled = false
  return {
    pid: worker.process.pid!,
    started: Deferred.await(started),
    exited: Deferred.await(exited),
    stop: Effect.sync(() => {
      if (worker.isDead()) return
      if (worker.isConnected()) worker.send(STOP, undefined, () => undefined)
      // A second SIGTERM would end it at once rather than cleanly.
      else if (!signalled) signalled = worker.process.kill("SIGTERM")
    }),
    kill: Effect.sync(() => {
      if (!worker.isDead()) worker.process.kill("SIGKILL")
    })
  } satisfies WorkerProcess
})
