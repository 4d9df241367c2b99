/** The server's own key/value configuration (encryption key, default result storage …) in SQL. */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"

export class ConfigurationRepo extends Effect.Service<ConfigurationRepo>()("baton/ConfigurationRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** The value of `key`, when it has one (a stored JSON null is a value). */
    const find = (key: string) =>
      Effect.map(sql<{ value: unknown }>`SELECT value FROM configuration WHERE key = ${key}`, (rows) =>
        rows.length > 0 ? Option.some(rows[0]!.value) : Option.none()
      )

    /** Sets the value of `key`, replacing what was there. */
    const write = Effect.fn("ConfigurationRepo.write")(function* (key: string, value: unknown) {
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
    const readOrCreate = Effect.fn("ConfigurationRepo.readOrCreate")(function* (key: string, value: unknown) {
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
