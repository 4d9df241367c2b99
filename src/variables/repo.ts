/** Variables in SQL. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { isUniqueViolation, sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven, type SortedPage, countWhere, findRowBy, pageOf } from "../database/rows.ts"
import { INTEGRITY_CONFLICT } from "../domain/errors.ts"
import { VariableNameTaken } from "./errors.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { Variable, VariableFilter, type VariableSort } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

/** A row of `variable`: its wire record, decoded (its timestamps Dates, its value and tags parsed jsonb). */
export const VariableRow = Schema.typeSchema(Variable)

interface NewVariable {
  readonly name: string
  readonly value: unknown
  readonly tags: ReadonlyArray<string>
}

const NameValueRow = Schema.Struct({ name: Schema.String, value: Schema.Unknown })

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

    const insert = SqlSchema.findOne({
      Request: AsGiven<NewVariable & { readonly id: string; readonly at: Date }>(),
      Result: VariableRow,
      execute: (variable) =>
        sql`
          INSERT INTO variable (id, created, updated, name, value, tags)
          VALUES (${variable.id}, ${variable.at}, ${variable.at}, ${variable.name},
                  ${JSON.stringify(variable.value ?? null)}::jsonb, ${JSON.stringify(variable.tags)}::jsonb)
          ON CONFLICT (name) DO NOTHING
          RETURNING *
        `
    })

    /** Creates the variable; VariableNameTaken when another has its name. */
    const create = traced("VariablesRepo.create")(function* (input: NewVariable) {
      const inserted = yield* insert({ ...input, id: yield* newId, at: yield* now })
      if (Option.isNone(inserted)) {
        return yield* new VariableNameTaken({ detail: `A variable with the name '${input.name}' already exists.` })
      }
      return inserted.value
    })

    const find = findRowBy(sql, "variable", "id", VariableRow)
    const findByName = findRowBy(sql, "variable", "name", VariableRow)

    const namesAndValues = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: NameValueRow,
      execute: (names) => sql`SELECT name, value FROM variable WHERE name = ANY(${names}::text[])`
    })

    /** The values of the variables with these names. */
    const valuesByName = (names: ReadonlyArray<string>) =>
      names.length === 0
        ? Effect.succeed(new Map<string, unknown>())
        : Effect.map(namesAndValues(names), (rows) => new Map(rows.map((r) => [r.name, r.value])))

    const page = pageOf(sql, "variable", VariableRow)
    const filter = (options: { readonly filter: VariableFilter | null | undefined } & SortedPage<VariableSort>) => page(where(options.filter), orderBy[options.sort], options)

    const counted = countWhere(sql, "variable")
    const count = (variableFilter: VariableFilter | null | undefined) => counted(where(variableFilter))

    /**
     * Sets the given columns (and `updated`); false when there is no such variable, VariableNameTaken
     * (with the reference's integrity conflict) when another variable has the new name.
     */
    const update = traced("VariablesRepo.update")(function* (id: string, changes: Readonly<Record<string, unknown>>) {
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
