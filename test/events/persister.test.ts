/** The event persister's writes: several in flight at once, and none lost when one is interrupted. */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { EventBus } from "../../src/events/bus.ts"
import { EventPersister } from "../../src/events/persister.ts"
import { numberedEvent } from "../support/events.ts"
import { testServer } from "../support/server.ts"

const realMillis = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

describe("the event persister", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("writes at the next drain a batch whose write was interrupted (the server stopping mid-write)", () =>
      Effect.gen(function* () {
        const persister = yield* EventPersister
        const bus = yield* EventBus
        const sql = yield* SqlClient.SqlClient
        yield* bus.publish(Array.from({ length: 3 }, (_, i) => numberedEvent("interrupted", i)))
        // The events table locked against writes (embedded, the one connection taken as well).
        const locked = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const holder = yield* sql.withTransaction(
          Effect.zipRight(sql`LOCK TABLE events IN SHARE MODE`, Effect.zipRight(Deferred.succeed(locked, undefined), Deferred.await(release)))
        ).pipe(Effect.fork)
        yield* Deferred.await(locked)
        // An iteration takes the batch from the queue and waits to write it; the server stops it.
        const iteration = yield* Effect.fork(persister.tick)
        yield* realMillis(300)
        // (Embedded, it is interrupted once it has the connection: released after asking.)
        yield* Fiber.interruptFork(iteration)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        yield* Fiber.await(iteration)

        expect(yield* persister.drain).toBe(3)
        const stored = yield* sql<{ event: string }>`SELECT event FROM events WHERE event LIKE 'interrupted.%' ORDER BY event`
        expect(stored.map((row) => row.event)).toEqual(["interrupted.0", "interrupted.1", "interrupted.2"])
      }))

    it.effect("writes a backlog of several batches, every event once", () =>
      Effect.gen(function* () {
        const persister = yield* EventPersister
        const bus = yield* EventBus
        const sql = yield* SqlClient.SqlClient
        // 2000 events a write: three writes, two of them at once.
        const events = Array.from({ length: 5_500 }, (_, i) => numberedEvent("backlog", 1_000 + i))
        yield* bus.publish(events)
        expect(yield* persister.drain).toBe(5_500)
        const [{ n }] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM events WHERE event LIKE 'backlog.%'`
        expect(n).toBe(5_500)
      }))
  })
})
