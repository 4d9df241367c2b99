/**
 * The primary of `--workers N` (src/cluster/primary.ts) with fake workers on the TestClock: one worker
 * first and the others once it serves, the start lines printed once, a dead worker replaced with a
 * growing delay, a first worker that never serves ending it all, and every worker stopped (or
 * killed after the grace) when the primary stops. Real processes: test/faults/workers.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Deferred, Duration, Effect, Fiber, TestClock } from "effect"
import {
  checkWorkers,
  ClusterError,
  restartDelay,
  STOP_GRACE,
  supervise,
  type WorkerExit,
  type WorkerProcess
} from "../../src/cluster/primary.ts"
import type { Started } from "../../src/cluster/worker.ts"
import { loadSettings as loadFrom, type SettingsOverrides } from "../../src/settings/settings.ts"

/** Settings from these overrides only: the environment of the test run never leaks in. */
const loadSettings = (overrides: SettingsOverrides) =>
  loadFrom(overrides).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))

interface FakeWorker extends WorkerProcess {
  readonly serve: Effect.Effect<void>
  readonly die: (exit: WorkerExit) => Effect.Effect<void>
  readonly stopAsked: () => boolean
  readonly timesAsked: () => number
  readonly hasExited: Effect.Effect<boolean>
}

/** Fake workers: each serves when told, dies when told, and stops when asked, but only after `ignores` requests. */
const fakes = (options: { readonly ignores?: number } = {}) =>
  Effect.gen(function* () {
    const forked: Array<FakeWorker> = []
    const lines: Array<string> = []
    let next = 100
    const fork = Effect.gen(function* () {
      const started = yield* Deferred.make<Started>()
      const exited = yield* Deferred.make<WorkerExit>()
      let asked = 0
      const pid = next++
      const die = (exit: WorkerExit) => Effect.asVoid(Deferred.succeed(exited, exit))
      const worker: FakeWorker = {
        pid,
        started: Deferred.await(started),
        exited: Deferred.await(exited),
        stop: Effect.suspend(() => {
          asked++
          return asked > (options.ignores ?? 0) ? die({ code: 0, signal: null }) : Effect.void
        }),
        kill: die({ code: null, signal: "SIGKILL" }),
        serve: Effect.asVoid(Deferred.succeed(started, { type: "baton:started", port: 4200, lines: [`API at ${pid}`, "UI at …"] })),
        die,
        stopAsked: () => asked > 0,
        timesAsked: () => asked,
        hasExited: Deferred.isDone(exited)
      }
      forked.push(worker)
      return worker
    })
    const print = (line: string) => Effect.sync(() => void lines.push(line))
    return { forked, lines, fork, print }
  })

/** Lets forked fibers run up to their next wait. */
const settle = Effect.gen(function* () {
  for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
})

describe("the primary of several workers", () => {
  it.scoped("starts one worker, the others once it serves, and prints the start lines once", () =>
    Effect.gen(function* () {
      const { fork, forked, lines, print } = yield* fakes()
      yield* Effect.forkScoped(supervise({ workers: 3, fork, print }))
      yield* settle
      expect(forked.length).toBe(1)
      yield* forked[0]!.serve
      yield* settle
      expect(forked.length).toBe(3)
      expect(lines).toEqual(["API at 100", "UI at …"])
      yield* forked[1]!.serve
      yield* forked[2]!.serve
      yield* settle
      expect(lines).toEqual(["API at 100", "UI at …", "Baton 0.1.0: 3 workers on port 4200"])
    }))

  it.scoped("replaces a dead worker after 1 s, then 2 s, 4 s while it keeps dying, and after 1 s again once it lived a minute", () =>
    Effect.gen(function* () {
      const { fork, forked, print } = yield* fakes()
      yield* Effect.forkScoped(supervise({ workers: 2, fork, print }))
      yield* settle
      yield* forked[0]!.serve
      yield* settle
      yield* forked[1]!.serve
      yield* settle
      expect(forked.length).toBe(2)

      const dieAndCount = (worker: FakeWorker, delay: Duration.Duration) =>
        Effect.gen(function* () {
          const before = forked.length
          yield* worker.die({ code: null, signal: "SIGKILL" })
          yield* settle
          yield* TestClock.adjust(Duration.subtract(delay, Duration.millis(1)))
          yield* settle
          expect(forked.length, `not before ${Duration.format(delay)}`).toBe(before)
          yield* TestClock.adjust(Duration.millis(1))
          yield* settle
          expect(forked.length, `after ${Duration.format(delay)}`).toBe(before + 1)
          const replacement = forked.at(-1)!
          yield* replacement.serve
          yield* settle
          return replacement
        })

      let worker = yield* dieAndCount(forked[1]!, Duration.seconds(1))
      worker = yield* dieAndCount(worker, Duration.seconds(2))
      worker = yield* dieAndCount(worker, Duration.seconds(4))
      yield* TestClock.adjust(Duration.minutes(1))
      worker = yield* dieAndCount(worker, Duration.seconds(1))
      // The other worker was never touched.
      expect(yield* forked[0]!.hasExited).toBe(false)
    }))

  it("waits at most a minute between restarts", () => {
    expect([1, 2, 3, 6, 7, 100].map((n) => Duration.toSeconds(restartDelay(n)))).toEqual([1, 2, 4, 32, 60, 60])
  })

  it.scoped("stops when the first worker exits before it serves, starting no other", () =>
    Effect.gen(function* () {
      const { fork, forked, print } = yield* fakes()
      const primary = yield* Effect.fork(supervise({ workers: 2, fork, print }))
      yield* settle
      yield* forked[0]!.die({ code: 1, signal: null })
      const error = yield* Effect.flip(Fiber.join(primary))
      expect(error).toBeInstanceOf(ClusterError)
      expect(error.message).toBe("The first worker (pid 100) exited with code 1 before it served.")
      expect(forked.length).toBe(1)
    }))

  it.scoped("asks every worker to stop when it stops, and waits for them", () =>
    Effect.gen(function* () {
      const { fork, forked, print } = yield* fakes()
      const primary = yield* Effect.fork(supervise({ workers: 2, fork, print }))
      yield* settle
      yield* forked[0]!.serve
      yield* settle
      yield* forked[1]!.serve
      yield* settle
      yield* Fiber.interrupt(primary)
      expect(forked.map((worker) => worker.stopAsked())).toEqual([true, true])
      expect(yield* Effect.all(forked.map((worker) => worker.hasExited))).toEqual([true, true])
      expect(forked.length).toBe(2)
    }))

  it.scoped("asks every worker to stop at once, and kills those that have not stopped within the grace", () =>
    Effect.gen(function* () {
      const { fork, forked, print } = yield* fakes({ ignores: Infinity })
      const primary = yield* Effect.fork(supervise({ workers: 3, fork, print }))
      yield* settle
      yield* forked[0]!.serve
      yield* settle
      yield* forked[1]!.serve
      yield* forked[2]!.serve
      yield* settle
      const stopping = yield* Effect.fork(Fiber.interrupt(primary))
      yield* settle
      expect(forked.map((worker) => worker.stopAsked())).toEqual([true, true, true])
      // One stops in time; the other two are killed together when the grace is over.
      yield* forked[1]!.die({ code: 0, signal: null })
      yield* TestClock.adjust(Duration.subtract(STOP_GRACE, Duration.millis(1)))
      yield* settle
      expect(yield* Effect.all(forked.map((worker) => worker.hasExited))).toEqual([false, true, false])
      yield* TestClock.adjust(Duration.millis(1))
      yield* Fiber.join(stopping)
      expect(yield* Effect.all(forked.map((worker) => worker.exited))).toEqual([
        { code: null, signal: "SIGKILL" },
        { code: 0, signal: null },
        { code: null, signal: "SIGKILL" }
      ])
      expect(forked.length).toBe(3)
    }))

  it.scoped("asks again every second a worker that has not heard (one still loading its modules)", () =>
    Effect.gen(function* () {
      const { fork, forked, print } = yield* fakes({ ignores: 2 })
      const primary = yield* Effect.fork(supervise({ workers: 1, fork, print }))
      yield* settle
      yield* forked[0]!.serve
      yield* settle
      const stopping = yield* Effect.fork(Fiber.interrupt(primary))
      yield* settle
      expect(forked[0]!.timesAsked()).toBe(1)
      yield* TestClock.adjust(Duration.seconds(1))
      yield* settle
      expect(forked[0]!.timesAsked()).toBe(2)
      expect(yield* forked[0]!.hasExited).toBe(false)
      yield* TestClock.adjust(Duration.seconds(1))
      yield* Fiber.join(stopping)
      expect(yield* forked[0]!.exited).toEqual({ code: 0, signal: null })
    }))

  it.effect("refuses more than one worker on the embedded database or with leases in memory, in one line", () =>
    Effect.gen(function* () {
      const refusal = (overrides: Record<string, unknown>) =>
        Effect.flatMap(loadSettings(overrides), checkWorkers).pipe(Effect.flip, Effect.map((error) => error.message))
      expect(yield* refusal({ "server.api.workers": 2 })).toBe(
        "2 workers need PostgreSQL: the embedded database is served by one process, one session at a time. " +
          "Set server.database.connection_url (docs/scaling.md), or run one worker."
      )
      const postgres = { "server.database.connection_url": "postgresql://baton@db.internal/baton" }
      expect(yield* refusal({ ...postgres, "server.api.workers": 3, "server.concurrency.lease_storage": "memory" })).toBe(
        "3 workers cannot keep concurrency leases in memory (server.concurrency.lease_storage=memory): " +
          "a client's requests reach any worker. Set it to database, the default on PostgreSQL."
      )
      // Accepted: several workers on PostgreSQL; one worker anywhere.
      yield* Effect.flatMap(loadSettings({ ...postgres, "server.api.workers": 4 }), checkWorkers)
      yield* Effect.flatMap(loadSettings({}), checkWorkers)
      yield* Effect.flatMap(loadSettings({ "server.concurrency.lease_storage": "memory" }), checkWorkers)
    }))

  it.effect("takes the number of workers from 1 to 256, and 1 unless told", () =>
    Effect.gen(function* () {
      expect((yield* loadSettings({})).server.api.workers).toBe(1)
      expect((yield* Effect.flip(loadSettings({ "server.api.workers": 0 }))).message).toBe(
        'Invalid setting server.api.workers="0": expected integer >= 1 <= 256'
      )
      expect((yield* loadSettings({ "server.api.workers": 256 })).server.api.workers).toBe(256)
      expect((yield* Effect.flip(loadSettings({ "server.api.workers": 257 }))).message).toBe(
        'Invalid setting server.api.workers="257": expected integer >= 1 <= 256'
      )
    }))
})
