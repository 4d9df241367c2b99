import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import pg from "pg"
import { Leadership, type Role } from "../../src/database/leadership.ts"
import { realClock } from "../../src/domain/time.ts"
import { layer as settingsLayer } from "../../src/settings/settings.ts"
import { onServer, scopedDatabase } from "../support/database.ts"

/** A process's leadership on `url` (its own connection), built in `scope`: closing the scope ends its session. */
const leadershipIn = (url: string, scope: Scope.Scope) =>
  Effect.map(
    Layer.buildWithScope(Leadership.Default.pipe(Layer.provide(settingsLayer({ "server.database.connection_url": url }))), scope),
    (built) => Context.get(built, Leadership)
  )

const realSleep = (millis: number) => Effect.sleep(millis).pipe(Effect.withClock(realClock))

/** Waits (real time, at most `millis`) until `leadership` leads `roles`; how long it took. */
const untilLeads = (leadership: Leadership, roles: ReadonlyArray<Role>, millis: number) =>
  Effect.gen(function* () {
    const started = Date.now()
    while (!roles.every((role) => (leadership.leading.pipe(Effect.runSync)).includes(role))) {
      if (Date.now() - started > millis) throw new Error(`not leading ${roles.join(", ")} after ${millis} ms`)
      yield* realSleep(20)
    }
    return Date.now() - started
  })

describe.skipIf(!onServer())("leadership on PostgreSQL", () => {
  it.live("services asking at once whether this process leads share one check on the lock's connection", () =>
    Effect.gen(function* () {
      // The most statements in flight at once on the lock's connection ("baton leadership").
      let inFlight = 0
      let most = 0
      const query = pg.Client.prototype.query
      pg.Client.prototype.query = function(this: pg.Client, ...args: Array<unknown>) {
        const result = (query as (...a: Array<unknown>) => unknown).apply(this, args)
        const name = (this as unknown as { connectionParameters?: { application_name?: string } }).connectionParameters?.application_name
        if (name === "baton leadership" && result instanceof Promise) {
          most = Math.max(most, ++inFlight)
          const done = () => void inFlight--
          result.then(done, done)
        }
        return result
      } as typeof query
      yield* Effect.addFinalizer(() => Effect.sync(() => void (pg.Client.prototype.query = query)))

      const database = yield* scopedDatabase({ migrated: false })
      const leadership = yield* leadershipIn(database.url!, yield* Effect.scope)
      yield* leadership.want(["scheduler", "late_runs"])
      yield* untilLeads(leadership, ["scheduler", "late_runs"], 5000)
      most = 0
      const answers = yield* Effect.all(Array.from({ length: 20 }, (_, i) => leadership.leads(i % 2 === 0 ? "scheduler" : "late_runs")), {
        concurrency: "unbounded"
      })
      expect(answers).toEqual(Array.from({ length: 20 }, () => true))
      // node-postgres would queue the others behind the first (and warns that this is deprecated).
      expect(most).toBe(1)
      expect(yield* leadership.leads("scheduler")).toBe(true)
      // Not asked for: not led (and wanted from now on).
      expect(yield* leadership.leads("foreman")).toBe(false)
      yield* untilLeads(leadership, ["foreman"], 5000)
      expect(yield* leadership.leads("foreman")).toBe(true)
    }).pipe(Effect.scoped), 30_000)

  it.live("a process running only some singletons leads those; another leads the rest, and takes over the first's when it stops", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: false })
      // The first: everything but the scheduler (as an API server with the scheduler disabled).
      const firstScope = yield* Scope.make()
      const first = yield* leadershipIn(database.url!, firstScope)
      yield* first.want(["late_runs", "pause_expirations", "foreman"])
      expect(yield* first.leading).toEqual(["foreman", "late_runs", "pause_expirations"])

      // The second runs them all: the scheduler is its at once, the others are the first's.
      const second = yield* leadershipIn(database.url!, yield* Effect.scope)
      yield* second.want(["scheduler", "late_runs", "pause_expirations", "foreman"])
      expect(yield* second.leading).toEqual(["scheduler"])
      expect(yield* second.leads("scheduler")).toBe(true)
      expect(yield* second.leads("late_runs")).toBe(false)
      expect(yield* first.leads("late_runs")).toBe(true)
      expect(yield* first.leads("scheduler")).toBe(false)

      // The first stops (its session ends): the second has its services within about a second.
      yield* Scope.close(firstScope, Exit.void)
      const took = yield* untilLeads(second, ["late_runs", "pause_expirations", "foreman"], 5000)
      expect(took).toBeLessThan(2500)
      expect(yield* second.leads("late_runs")).toBe(true)
      expect(yield* second.leading).toEqual(["foreman", "late_runs", "pause_expirations", "scheduler"])
    }).pipe(Effect.scoped), 30_000)

  it.live("processes asking for the same services at once do not split them: one leads them all", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: false })
      const roles: ReadonlyArray<Role> = ["cancellation_cleanup", "db_vacuum", "foreman", "late_runs", "pause_expirations", "repossessor", "scheduler"]
      for (let round = 0; round < 3; round++) {
        // Each round's three processes stop before the next round's start.
        yield* Effect.scoped(Effect.gen(function* () {
          const scope = yield* Effect.scope
          const processes = yield* Effect.all(Array.from({ length: 3 }, () => leadershipIn(database.url!, scope)))
          // All connected and waiting: then all ask at once.
          yield* realSleep(300)
          yield* Effect.all(processes.map((leadership) => leadership.want(roles)), { concurrency: "unbounded" })
          const leading = yield* Effect.all(processes.map((leadership) => leadership.leading))
          expect(leading.map((list) => list.length).sort()).toEqual([0, 0, roles.length])
        }))
      }
    }).pipe(Effect.scoped), 30_000)
})
