import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Fiber, Layer, Ref, TestClock } from "effect"
import { BackgroundServicesLive } from "../../src/services/registry.ts"
import {
  BackgroundServices,
  defineService,
  loop,
  registerServices,
  runRegistered,
  runServices
} from "../../src/services/runner.ts"
import { Leadership } from "../../src/database/leadership.ts"
import { layer as settingsLayer, Settings } from "../../src/settings/settings.ts"
import { buildInServer, testServer } from "../support/server.ts"

/** The leadership of the settings given: on the embedded database, this process always leads. */
const withLeadership = <A, E, R>(layer: Layer.Layer<A, E, R>) => layer.pipe(Layer.provide(Leadership.Default))

/** Leadership as another process holding it, or not, says. */
const leadershipOf = (leads: Ref.Ref<boolean>) =>
  Layer.succeed(
    Leadership,
    Leadership.make({ leads: () => Ref.get(leads), want: () => Effect.void, leading: Effect.succeed([]), changed: Effect.never })
  )

/** A service that counts its iterations, optionally failing or dying on some of them. */
const counting = (options: { readonly failOn?: ReadonlyArray<number>; readonly dieOn?: ReadonlyArray<number> } = {}) =>
  Effect.gen(function* () {
    const count = yield* Ref.make(0)
    const service = defineService({
      name: "late_runs",
      interval: (s) => Duration.seconds(s.server.services.late_runs.loop_seconds),
      tick: Effect.gen(function* () {
        const n = yield* Ref.updateAndGet(count, (c) => c + 1)
        if (options.failOn?.includes(n)) return yield* Effect.fail(`iteration ${n} failed`)
        if (options.dieOn?.includes(n)) return yield* Effect.die(new Error(`iteration ${n} died`))
      })
    })
    return { count, service }
  })

describe("service runner", () => {
  it.scoped("runs an iteration at once and then every loop_seconds of clock time", () =>
    Effect.gen(function* () {
      const { count, service } = yield* counting()
      yield* Layer.build(withLeadership(runServices([service]))).pipe(
        Effect.provide(settingsLayer({ "server.services.late_runs.loop_seconds": 10 }))
      )
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* Ref.get(count)).toBe(1)
      yield* TestClock.adjust(Duration.seconds(9))
      expect(yield* Ref.get(count)).toBe(1)
      yield* TestClock.adjust(Duration.seconds(1))
      expect(yield* Ref.get(count)).toBe(2)
      yield* TestClock.adjust(Duration.seconds(100))
      expect(yield* Ref.get(count)).toBe(12)
    })
  )

  it.scoped("never runs a disabled service", () =>
    Effect.gen(function* () {
      const { count, service } = yield* counting()
      yield* Layer.build(withLeadership(runServices([service]))).pipe(
        Effect.provide(settingsLayer({ "server.services.late_runs.enabled": false }))
      )
      yield* TestClock.adjust(Duration.hours(1))
      expect(yield* Ref.get(count)).toBe(0)
    })
  )

  it.scoped("survives failing and dying iterations", () =>
    Effect.gen(function* () {
      const { count, service } = yield* counting({ failOn: [2], dieOn: [3] })
      const fiber = yield* Effect.fork(loop(service, Duration.seconds(5)))
      yield* TestClock.adjust(Duration.seconds(30))
      expect(yield* Ref.get(count)).toBe(7)
      expect(fiber.unsafePoll()).toBeNull()
      yield* Fiber.interrupt(fiber)
    })
  )

  it.effect("stops every service when the scope closes", () =>
    Effect.gen(function* () {
      const { count, service } = yield* counting()
      yield* Effect.scoped(
        Layer.build(withLeadership(runServices([service]))).pipe(
          Effect.provide(settingsLayer({ "server.services.late_runs.loop_seconds": 1 })),
          Effect.zipRight(TestClock.adjust(Duration.seconds(3)))
        )
      )
      const afterShutdown = yield* Ref.get(count)
      expect(afterShutdown).toBe(4)
      yield* TestClock.adjust(Duration.seconds(60))
      expect(yield* Ref.get(count)).toBe(afterShutdown)
    })
  )

  it.scoped("runs a singleton service's iterations only while this process leads, and the others always", () =>
    Effect.gen(function* () {
      const leads = yield* Ref.make(false)
      const single = yield* counting()
      const everywhere = yield* counting()
      yield* Layer.build(runServices([{ ...single.service, singleton: true }, { ...everywhere.service, name: "pause_expirations" }])).pipe(
        Effect.provide(leadershipOf(leads)),
        Effect.provide(settingsLayer({ "server.services.late_runs.loop_seconds": 1, "server.services.pause_expirations.loop_seconds": 1 }))
      )
      yield* TestClock.adjust(Duration.seconds(4))
      expect(yield* Ref.get(single.count)).toBe(0)
      expect(yield* Ref.get(everywhere.count)).toBe(5)
      // Leading from now on: the next iteration runs.
      yield* Ref.set(leads, true)
      yield* TestClock.adjust(Duration.seconds(2))
      expect(yield* Ref.get(single.count)).toBe(2)
      // Led by another process again.
      yield* Ref.set(leads, false)
      yield* TestClock.adjust(Duration.seconds(5))
      expect(yield* Ref.get(single.count)).toBe(2)
      expect(yield* Ref.get(everywhere.count)).toBe(12)
    })
  )

  it.scoped("runs what a service's own Layer registered, with the services that Layer was built with", () =>
    Effect.gen(function* () {
      class Counter extends Context.Tag("test/Counter")<Counter, Ref.Ref<number>>() {}
      const count = yield* Ref.make(0)
      const registration = registerServices(
        defineService({
          name: "late_runs",
          interval: (s) => Duration.seconds(s.server.services.late_runs.loop_seconds),
          tick: Effect.flatMap(Counter, (counter) => Ref.update(counter, (c) => c + 1))
        })
      ).pipe(Layer.provide(Layer.succeed(Counter, count)))
      yield* Layer.build(
        runRegistered().pipe(
          Layer.provide(registration),
          Layer.provide(BackgroundServices.Default),
          Layer.provide(Leadership.Default),
          Layer.provide(settingsLayer({ "server.services.late_runs.loop_seconds": 10 }))
        )
      )
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* Ref.get(count)).toBe(1)
      yield* TestClock.adjust(Duration.seconds(10))
      expect(yield* Ref.get(count)).toBe(2)
    })
  )
})

describe("the registered background services", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.scoped("are every background service of the settings, each with its interval", () =>
      Effect.gen(function* () {
        const settings = yield* Settings
        // Each registration provides the services it uses: built with the server's, they are the server's.
        const context = yield* buildInServer(BackgroundServicesLive)
        const registered = yield* Effect.flatMap(BackgroundServices, (services) => services.all).pipe(Effect.provide(context))
        const names = [...new Set(registered.map((s) => s.name))].sort()
        expect(names).toEqual(
          [
            "cancellation_cleanup",
            "db_vacuum",
            "event_persister",
            "foreman",
            "late_runs",
            "pause_expirations",
            "repossessor",
            "scheduler",
            "task_run_recorder",
            "triggers"
          ].sort()
        )
        // Those that must run once among processes sharing the database run only in the leader.
        expect([...new Set(registered.filter((s) => s.singleton).map((s) => s.name))].sort()).toEqual(
          ["cancellation_cleanup", "db_vacuum", "event_persister", "foreman", "late_runs", "pause_expirations", "repossessor", "scheduler"]
        )
        // The persister writes and relays in every process (each what it received and wrote); deleting
        // and the churning tables' VACUUM are the leader's.
        expect(registered.filter((s) => s.name === "event_persister").map((s) => [s.loop, s.singleton === true])).toEqual([
          [undefined, false],
          ["outbox", false],
          ["retention", true],
          ["table upkeep", true]
        ])
        const upkeep = registered.find((s) => s.loop === "table upkeep")!
        expect(Duration.toSeconds(Duration.decode(upkeep.interval(settings)))).toBe(10)
        expect(registered.filter((s) => s.name === "scheduler").every((s) => s.singleton)).toBe(true)
        const scheduler = registered.find((s) => s.name === "scheduler" && s.loop === undefined)!
        expect(Duration.toSeconds(Duration.decode(scheduler.interval(settings)))).toBe(60)
        // The scheduler's second loop picks up changed deployments quickly.
        const recent = registered.find((s) => s.loop === "recent deployments")!
        expect(recent.name).toBe("scheduler")
        expect(Duration.toSeconds(Duration.decode(recent.interval(settings)))).toBe(5)
        const lateRuns = registered.find((s) => s.name === "late_runs")!
        expect(Duration.toSeconds(Duration.decode(lateRuns.interval(settings)))).toBe(5)
      })
    )
  })
})
