/** Rows read through schemas (SqlSchema): what does not fit is a defect, never a failure a handler answers. */
import { describe, expect, it } from "@effect/vitest"
import { SqlSchema } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Data, Effect, Exit, Option, ParseResult, Schema } from "effect"
import { sqlErrorsAsDefects } from "../../src/database/errors.ts"
import { AsGiven, CountRow } from "../../src/database/rows.ts"

class Taken extends Data.TaggedError("Taken")<{}> {}

/** A repository over statements that answer these rows (or fail so). */
const repository = sqlErrorsAsDefects({
  count: SqlSchema.single({ Request: Schema.Void, Result: CountRow, execute: () => Effect.succeed([{ count: "3" }]) }),
  malformed: SqlSchema.findOne({ Request: Schema.String, Result: CountRow, execute: () => Effect.succeed([{ count: 3 }]) }),
  none: SqlSchema.single({ Request: Schema.Void, Result: CountRow, execute: () => Effect.succeed([]) }),
  failed: SqlSchema.findAll({
    Request: AsGiven<{ readonly id: string }>(),
    Result: CountRow,
    execute: () => Effect.fail(new SqlError({ cause: new Error("boom") }))
  }),
  taken: (name: string) => Effect.zipRight(Effect.succeed(name), Effect.fail(new Taken()))
})

const defect = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined

describe("row schemas", () => {
  it.effect("decode what fits: a count's bigint string is a number", () =>
    Effect.gen(function* () {
      expect(yield* repository.count()).toEqual({ count: 3 })
    }))

  it.effect("a row its schema refuses, no row where one is due, a failed statement: defects", () =>
    Effect.gen(function* () {
      expect(ParseResult.isParseError(defect(yield* Effect.exit(repository.malformed("x"))))).toBe(true)
      expect(Cause.isNoSuchElementException(defect(yield* Effect.exit(repository.none())))).toBe(true)
      expect(defect(yield* Effect.exit(repository.failed({ id: "x" })))).toBeInstanceOf(SqlError)
    }))

  it.effect("a repository's own errors stay failures", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(repository.taken("a"))
      expect(Exit.isFailure(exit) && Option.getOrUndefined(Cause.failureOption(exit.cause))).toBeInstanceOf(Taken)
    }))
})
