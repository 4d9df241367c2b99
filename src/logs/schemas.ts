/** Logs on the wire: records, create bodies, filter and sort, as the reference has them. */
import { Schema } from "effect"
import { criterion, type FilterSpec, Field, operatorField, strictStruct } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { LimitField } from "../domain/pagination.ts"
import { nullable, strictBody } from "../domain/schemas.ts"
import { Timestamp } from "../domain/time.ts"
import { parseTextQuery } from "../domain/text-search.ts"
import * as Lax from "../domain/lax.ts"

export const Log = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  level: Schema.Int,
  message: Schema.String,
  timestamp: Timestamp,
  flow_run_id: Schema.NullOr(Id),
  task_run_id: Schema.NullOr(Id)
}).annotations({ identifier: "Log" })
export type Log = typeof Log.Type

export const LogCreate = strictBody(
  {
    name: Schema.String,
    level: Lax.Int,
    message: Schema.String,
    timestamp: Timestamp,
    flow_run_id: nullable(Id),
    task_run_id: nullable(Id)
  },
  "LogCreate"
)
export type LogCreate = typeof LogCreate.Type

const at = criterion(Timestamp)

export const LogFilter = strictStruct(
  {
    operator: operatorField,
    level: criterion(strictStruct({ ge_: criterion(Lax.Int), le_: criterion(Lax.Int) }, "LogFilterLevel")),
    timestamp: criterion(strictStruct({ before_: at, after_: at }, "LogFilterTimestamp")),
    flow_run_id: criterion(strictStruct({ any_: criterion(Schema.Array(Id)) }, "LogFilterFlowRunId")),
    task_run_id: criterion(
      strictStruct({ any_: criterion(Schema.Array(Id)), is_null_: criterion(Lax.Bool) }, "LogFilterTaskRunId")
    ),
    text: criterion(strictStruct({ query: Schema.String.pipe(Schema.maxLength(200)) }, "LogFilterTextSearch"))
  },
  "LogFilter"
)
export type LogFilter = typeof LogFilter.Type

/** A log's searchable text: its message and logger name, lowercased. */
const searchable = "lower(log.message || ' ' || log.name)"

export const logFilterSpec: FilterSpec = {
  level: Field.range("log.level"),
  timestamp: Field.time("log.timestamp"),
  flow_run_id: Field.oneOf("log.flow_run_id", "uuid"),
  task_run_id: Field.oneOf("log.task_run_id", "uuid"),
  // Any plain term, every +term, no -term: case-insensitive substrings of the message or logger name.
  text: (sql, c) => {
    const query = parseTextQuery(c.query)
    const contains = (term: string) => sql`${sql.unsafe(searchable)} LIKE ${"%" + term.toLowerCase() + "%"}`
    return [
      ...(query.include.length > 0 ? [sql.or(query.include.map(contains))] : []),
      ...query.exclude.map((term) => sql`NOT (${contains(term)})`),
      ...query.required.map(contains)
    ]
  }
}

export const LogSort = Schema.Literal("TIMESTAMP_ASC", "TIMESTAMP_DESC").annotations({ identifier: "LogSort" })
export type LogSort = typeof LogSort.Type

export const ReadLogsBody = Schema.Struct({
  logs: criterion(LogFilter),
  sort: Schema.optionalWith(Schema.NullOr(LogSort), { default: () => "TIMESTAMP_ASC" as const }),
  offset: Schema.optionalWith(Schema.NullOr(Lax.int({ ge: 0 })), { default: () => 0 }),
  limit: LimitField
})
