/** The inputs of flow runs (what a paused run waits for, and what was sent to it) in SQL. */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { FlowRunInputKeyTaken, FlowRunNotFound } from "./errors.ts"

export class FlowRunInputsRepo extends Effect.Service<FlowRunInputsRepo>()("baton/FlowRunInputsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Stores an input for the run, in one statement that tells a taken key from a missing run. */
    const create = (flowRunId: string, input: { readonly key: string; readonly value: string; readonly sender: string | null }) =>
      Effect.gen(function* () {
        const id = yield* newId
        const at = yield* now
        const rows = yield* sql<{ outcome: "created" | "duplicate" | "missing" }>`
          WITH run AS (SELECT id FROM flow_run WHERE id = ${flowRunId}),
          inserted AS (
            INSERT INTO flow_run_input (id, created, updated, flow_run_id, key, value, sender)
            SELECT ${id}, ${at}, ${at}, run.id, ${input.key}, ${input.value}, ${input.sender} FROM run
            ON CONFLICT (flow_run_id, key) DO NOTHING
            RETURNING id
          )
          SELECT CASE
            WHEN EXISTS (SELECT 1 FROM inserted) THEN 'created'
            WHEN EXISTS (SELECT 1 FROM run) THEN 'duplicate'
            ELSE 'missing' END AS outcome
        `
        const outcome = rows[0]!.outcome
        if (outcome === "duplicate") return yield* new FlowRunInputKeyTaken()
        if (outcome === "missing") return yield* new FlowRunNotFound()
      })

    const filter = (
      flowRunId: string,
      options: { readonly prefix: string; readonly limit: number; readonly exclude_keys: ReadonlyArray<string> }
    ) =>
      sql<{ id: string; created: Date; updated: Date; flow_run_id: string; key: string; value: string; sender: string | null }>`
        SELECT * FROM flow_run_input
        WHERE flow_run_id = ${flowRunId} AND key LIKE ${options.prefix + "%"}
          AND NOT (key = ANY(${options.exclude_keys}::text[]))
        ORDER BY created ASC
        LIMIT ${options.limit}
      `

    /** The stored value (JSON text) of the run's input `key`. */
    const find = (flowRunId: string, key: string) =>
      Effect.map(
        sql<{ value: string }>`SELECT value FROM flow_run_input WHERE flow_run_id = ${flowRunId} AND key = ${key}`,
        (rows) => Option.fromNullable(rows[0]?.value)
      )

    /** False when the run has no input `key`. */
    const remove = (flowRunId: string, key: string) =>
      Effect.map(
        sql`DELETE FROM flow_run_input WHERE flow_run_id = ${flowRunId} AND key = ${key} RETURNING id`,
        (rows) => rows.length > 0
      )

    return sqlErrorsAsDefects({ create, filter, find, remove })
  })
}) {}
