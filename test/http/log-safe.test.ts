import { HttpApiError } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Cause, Effect, Schema } from "effect"
import { safeCause, safeError } from "../../src/http/log-safe.ts"
import { TestDatabase } from "../support/database.ts"

const SECRET = "correct-horse-battery-staple"

/** Some of the secret: an error may quote part of its input (V8 quotes ten characters of bad JSON). */
const PART = SECRET.slice(0, 10)

/** What a logger prints for `cause`. */
const printed = (cause: Cause.Cause<unknown>) => Cause.pretty(cause, { renderErrorCause: true })

describe("failures as they are logged", () => {
  it.layer(TestDatabase, { timeout: 60_000 })((it) => {
    it.effect("say what failed and where, without the input the errors quote", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        // PostgreSQL quotes the value it refused: `invalid input syntax for type uuid: "…"`.
        const refused = yield* Effect.flip(sql`SELECT ${SECRET}::uuid`)
        expect(printed(Cause.die(refused))).toContain(SECRET)
        const database = printed(Cause.die(safeError(refused)))
        expect(database).not.toContain(PART)
        expect(database).toContain("SqlError: Failed to execute statement")
        expect(database).toContain("SQLSTATE 22P02")

        const syntax = Effect.runSync(Effect.flip(Effect.try(() => JSON.parse(`{"password": ${SECRET}}`))))
        const decode = yield* Effect.flip(Schema.decodeUnknown(Schema.Struct({ name: Schema.Number }))({ name: SECRET }))
        const apiDecode = yield* HttpApiError.HttpApiDecodeError.fromParseError(decode)
        for (const error of [syntax, decode, apiDecode]) expect(printed(Cause.fail(error))).toContain(PART)
        const safe = printed(safeCause(Cause.sequential(Cause.fail(decode), Cause.die(syntax))))
        expect(safe).not.toContain(PART)
        expect(safe).toContain("ParseError")
        expect(safe).toContain("UnknownException")
        expect(printed(Cause.die(safeError(apiDecode)))).not.toContain(PART)
        expect(printed(Cause.die(safeError(apiDecode)))).toContain("HttpApiDecodeError (at name)")

        // Errors of the code's own making keep their message, and every error its place in the code.
        const bug = new TypeError("Cannot read properties of undefined (reading 'id')")
        const kept = printed(Cause.die(safeError(bug)))
        expect(kept).toContain("TypeError: Cannot read properties of undefined (reading 'id')")
        expect(kept).toContain("log-safe.test.ts")
      })
    )
  })
})
