import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { Encryption, open } from "../../src/blocks/encryption.ts"
import { ConfigurationRepo } from "../../src/configuration/repo.ts"
import { realClock } from "../../src/domain/time.ts"
import { testServer } from "../support/server.ts"

const realMillis = (ms: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

describe("the block encryption key", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("is read by a caller inside a transaction while another caller waits for a connection, with no deadlock, and both get the same key", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        // A fresh service: the key is not read yet.
        const encryption = yield* Effect.provide(Encryption, Encryption.DefaultWithoutDependencies)
        const held = yield* Deferred.make<void>()
        // Another fiber, outside the transaction, needs the key, and so a connection of its own...
        const outside = yield* Effect.fork(Effect.zipRight(Deferred.await(held), encryption.encrypt("outside")))
        const inside = yield* sql.withTransaction(
          Effect.gen(function* () {
            // ... while the transaction holds its connection (on the embedded database, the only one).
            yield* sql`SELECT 1`
            yield* Deferred.succeed(held, undefined)
            yield* realMillis(200)
            return yield* encryption.encrypt("inside")
          })
        ).pipe(Effect.timeout("10 seconds"), Effect.withClock(realClock))
        const outsideSealed = yield* Fiber.join(outside)
        const stored = yield* Effect.flatMap(ConfigurationRepo, (repo) => repo.find("ENCRYPTION_KEY"))
        expect(stored._tag).toBe("Some")
        const key = Buffer.from((stored as { value: { aes_256_gcm_key: string } }).value.aes_256_gcm_key, "base64")
        expect(open(key, inside)).toBe("inside")
        expect(open(key, outsideSealed)).toBe("outside")
      }).pipe(Effect.provide(ConfigurationRepo.Default))
    )
  })
})
