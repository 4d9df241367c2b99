import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import pg from "pg"
import { Leadership } from "../../src/database/leadership.ts"
import { realClock } from "../../src/domain/time.ts"
import { layer as settingsLayer } from "../../src/settings/settings.ts"
import { onServer, scopedDatabase } from "../support/database.ts"

describe("leadership on PostgreSQL", () => {
  it.live.skipIf(!onServer())("services asking at once whether this process leads share one check on the lock's connection", () =>
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
      // Built into the test's scope: the campaign runs as long as the test.
      const built = yield* Layer.build(Leadership.Default.pipe(Layer.provide(settingsLayer({ "server.database.connection_url": database.url! }))))
      const leadership = Context.get(built, Leadership)
      while (!(yield* leadership.isLeader)) yield* Effect.sleep("50 millis").pipe(Effect.withClock(realClock))
      most = 0
      const answers = yield* Effect.all(Array.from({ length: 20 }, () => leadership.leads), { concurrency: "unbounded" })
      expect(answers).toEqual(Array.from({ length: 20 }, () => true))
      // node-postgres would queue the others behind the first (and warns that this is deprecated).
      expect(most).toBe(1)
      expect(yield* leadership.leads).toBe(true)
    }).pipe(Effect.scoped), 30_000)
})
