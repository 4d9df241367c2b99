import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"
import { isTooManyParameters, MAX_STATEMENT_PARAMETERS } from "../../src/database/statements.ts"
import { testServer } from "../support/server.ts"

describe("statements while no span is made (the server's default)", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("run the short way: the same rows and errors, on the transaction's connection inside one, in half the operations or fewer", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TEMP TABLE IF NOT EXISTS short_path (n int)`
        expect(yield* sql<{ n: number }>`SELECT ${41}::int + 1 AS n`).toEqual([{ n: 42 }])
        // Refused before it is sent, as the transformer refuses it.
        const over = yield* Effect.exit(sql`SELECT 1 WHERE 0 IN ${sql.in(Array.from({ length: MAX_STATEMENT_PARAMETERS + 1 }, (_, i) => i))}`)
        expect(Exit.isFailure(over) && Cause.dieOption(over.cause).pipe(Option.exists(isTooManyParameters))).toBe(true)
        // A database error is the SqlError it was.
        const failed = yield* Effect.flip(sql`SELECT * FROM no_such_table`)
        expect(failed._tag).toBe("SqlError")
        // Inside a transaction, on its connection: what it wrote is seen there, and gone after the rollback.
        const seen = yield* Effect.flip(sql.withTransaction(Effect.gen(function* () {
          yield* sql`INSERT INTO short_path VALUES (7)`
          const rows = yield* sql<{ n: number }>`SELECT n FROM short_path`
          return yield* Effect.fail(rows)
        })))
        expect(seen).toEqual([{ n: 7 }])
        expect(yield* sql`SELECT n FROM short_path`).toEqual([])
        // Counted: the operations a statement takes, the short way and @effect/sql's (with a span).
        const count = (traced: boolean) => Effect.gen(function* () {
          let operations = 0
          class Counter extends Supervisor.AbstractSupervisor<void> {
            get value() { return Effect.void }
            override onEffect() { operations++ }
          }
          yield* sql`SELECT 1`.pipe(
            Effect.supervised(new Counter()),
            Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)),
            Effect.withTracerEnabled(traced)
          )
          return operations
        })
        const [short, full] = [yield* count(false), yield* count(true)]
        expect(short * 2).toBeLessThanOrEqual(full)
      }).pipe(Effect.withTracerEnabled(false))
    )
  })
})
