/** Variables in SQL. */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { isUniqueViolation, sqlErrorsAsDefects } from "../database/errors.ts"
import { INTEGRITY_CONFLICT } from "../domain/errors.ts"
import { VariableNameTaken } from "./errors.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { type Variable, VariableFilter, type VariableSort } from "./schemas.ts"

const orderBy: Record<VariableSort, string> = {
  CREATED_DESC: "created DESC, id",
  UPDATED_DESC: "updated DESC, id",
  NAME_DESC: "name DESC, id",
  NAME_ASC: "name ASC, id"
}

export class VariablesRepo extends Effect.Service<VariablesRepo>()("baton/VariablesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const where = (filter: VariableFilter | null | undefined) => VariableFilter.compile(sql, filter)

    /** Creates the variable; VariableNameTaken when another has its name. */
    const create = Effect.fn("VariablesRepo.create")(function* (input: {
      readonly name: string
      readonly value: unknown
      readonly tags: ReadonlyArray<string>
    }) {
      const at = yield* now
      const rows = yield* sql<Variable>`
        INSERT INTO variable (id, created, updated, name, value, tags)
        VALUES (${yield* newId}, ${at}, ${at}, ${input.name}, ${JSON.stringify(input.value ?? null)}::jsonb,
                ${JSON.stringify(input.tags)}::jsonb)
        ON CONFLICT (name) DO NOTHING
        RETURNING *
      `
      if (rows.length === 0) {
        return yield* new VariableNameTaken({ detail: `A variable with the name '${input.name}' already exists.` })
      }
      return rows[0]!
    })

    const find = (id: string) =>
      Effect.map(sql<Variable>`SELECT * FROM variable WHERE id = ${id}`, (rows) => Option.fromNullable(rows[0]))
    const findByName = (name: string) =>
      Effect.map(sql<Variable>`SELECT * FROM variable WHERE name = ${name}`, (rows) => Option.fromNullable(rows[0]))

    /** The values of the variables with these names. */
    const valuesByName = (names: ReadonlyArray<string>) =>
      names.length === 0
        ? Effect.succeed(new Map<string, unknown>())
        : Effect.map(
          sql<{ name: string; value: unknown }>`SELECT name, value FROM variable WHERE name = ANY(${names}::text[])`,
          (rows) => new Map(rows.map((r) => [r.name, r.value]))
        )

    const filter = (options: {
      readonly filter: VariableFilter | null | undefined
      readonly sort: VariableSort
      readonly offset: number
      readonly limit: number
    }) =>
      sql<Variable>`
        SELECT * FROM variable WHERE ${where(options.filter)}
        ORDER BY ${sql.unsafe(orderBy[options.sort])} LIMIT ${options.limit} OFFSET ${options.offset}
      `

    const count = (variableFilter: VariableFilter | null | undefined) =>
      Effect.map(sql<{ count: string }>`SELECT count(*) AS count FROM variable WHERE ${where(variableFilter)}`, (rows) =>
        Number(rows[0]!.count)
      )

    /**
     * Sets the given columns (and `updated`); false when there is no such variable, VariableNameTaken
     * (with the reference's integrity conflict) when another variable has the new name.
     */
    const update = Effect.fn("VariablesRepo.update")(function* (id: string, changes: Readonly<Record<string, unknown>>) {
      const at = yield* now
      const rows = yield* sql`UPDATE variable SET ${sql.update({ ...changes, updated: at })} WHERE id = ${id} RETURNING id`.pipe(
        Effect.catchIf(isUniqueViolation, () => new VariableNameTaken({ detail: INTEGRITY_CONFLICT }))
      )
      return rows.length > 0
    })

    const remove = (id: string) => Effect.map(sql`DELETE FROM variable WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    return sqlErrorsAsDefects({ create, find, findByName, valuesByName, filter, count, update, remove })
  })
}) {}
