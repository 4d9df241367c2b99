/** The server's own key/value configuration (encryption key, default result storage …) in SQL. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { traced } from "../domain/traced.ts"

/** The value of a row of `configuration`: any parsed jsonb, JSON null included. */
const ValueRow = Schema.Struct({ value: Schema.Unknown })

export class ConfigurationRepo extends Effect.Service<ConfigurationRepo>()("baton/ConfigurationRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const findValue = SqlSchema.findOne({
      Request: Schema.String,
      Result: ValueRow,
      execute: (key) => sql`SELECT value FROM configuration WHERE key = ${key}`
    })

    /** The value of `key`, when it has one (a stored JSON null is a value). */
    const find = (key: string) => Effect.map(findValue(key), Option.map((row) => row.value))

    /** Sets the value of `key`, replacing what was there. */
    const write = traced("ConfigurationRepo.write")(function* (key: string, value: unknown) {
      const at = yield* now
      yield* sql`
        INSERT INTO configuration (id, created, updated, key, value)
        VALUES (${yield* newId}, ${at}, ${at}, ${key}, ${JSON.stringify(value)}::jsonb)
        ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated = EXCLUDED.updated
      `
    })

    /**
     * The value of `key`, storing `value` first when there is none. Two callers racing both get the
     * one value that was stored first.
     */
    const readOrCreate = traced("ConfigurationRepo.readOrCreate")(function* (key: string, value: unknown) {
      const at = yield* now
      yield* sql`
        INSERT INTO configuration (id, created, updated, key, value)
        VALUES (${yield* newId}, ${at}, ${at}, ${key}, ${JSON.stringify(value)}::jsonb)
        ON CONFLICT (key) DO NOTHING
      `
      return Option.getOrUndefined(yield* find(key))
    })

    const remove = (key: string) => Effect.asVoid(sql`DELETE FROM configuration WHERE key = ${key}`)

    return sqlErrorsAsDefects({ find, write, readOrCreate, remove })
  })
}) {}
