/** Logs in SQL. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { type SortedPage, pageOf } from "../database/rows.ts"
import { Effect, Schema } from "effect"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { Log, type LogCreate, LogFilter, type LogSort } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

/** A row of `log`: its wire record, decoded (its timestamps Dates). */
export const LogRow = Schema.typeSchema(Log)

/** Rows per insert statement. */
const INSERT_BATCH = 1000

// Timestamps can tie; the id (time-ordered) keeps pages stable.
const orderBy: Record<LogSort, string> = {
  TIMESTAMP_ASC: "log.timestamp ASC, log.id ASC",
  TIMESTAMP_DESC: "log.timestamp DESC, log.id DESC"
}

/** NUL characters cannot be stored in text; they are dropped, as the reference drops them. */
const withoutNul = (text: string) => text.replaceAll("\u0000", "")

export class LogsRepo extends Effect.Service<LogsRepo>()("baton/LogsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Stores the logs, a statement per thousand; the logs as stored. */
    const create = traced("LogsRepo.create")(function* (logs: ReadonlyArray<LogCreate>) {
      const at = yield* now
      const stored: Array<Log> = []
      for (let i = 0; i < logs.length; i += INSERT_BATCH) {
        const rows = []
        for (const log of logs.slice(i, i + INSERT_BATCH)) {
          rows.push({
            id: yield* newId,
            name: withoutNul(log.name),
            level: log.level,
            message: withoutNul(log.message),
            timestamp: log.timestamp.toISOString(),
            flow_run_id: log.flow_run_id,
            task_run_id: log.task_run_id
          })
        }
        for (const row of rows) stored.push({ ...row, created: at, updated: at, timestamp: new Date(row.timestamp) })
        yield* sql`
          INSERT INTO log (id, created, updated, name, level, message, timestamp, flow_run_id, task_run_id)
          SELECT r.id, ${at}, ${at}, r.name, r.level, r.message, r.timestamp, r.flow_run_id, r.task_run_id
          FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(
            id uuid, name text, level smallint, message text, timestamp timestamptz, flow_run_id uuid, task_run_id uuid)
        `
      }
      return stored
    })

    const page = pageOf(sql, "log", LogRow)
    const filter = (options: { readonly filter: LogFilter | null | undefined } & SortedPage<LogSort>) => page(LogFilter.compile(sql, options.filter), orderBy[options.sort], options)

    /** The logs with these ids, by time. */
    const byIds = (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([] as ReadonlyArray<Log>)
        : SqlSchema.findAll({ Request: Schema.Array(Schema.String), Result: LogRow, execute: (wanted) => sql`SELECT * FROM log WHERE id = ANY(${wanted}::uuid[]) ORDER BY timestamp, id` })(ids)

    return sqlErrorsAsDefects({ create, filter, byIds })
  })
}) {}
