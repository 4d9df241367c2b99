/** Logs on the wire: records, create bodies, filter and sort, as the reference has them. */
import { Schema } from "effect"
import { criterion, Criterion, Filter } from "../domain/filters.ts"
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

/** A log's searchable text: its message and logger name, lowercased. */
const searchable = "lower(log.message || ' ' || log.name)"

export const LogFilter = Filter.make("LogFilter", {
  level: Criterion.range("LogFilterLevel", "log.level", ["ge_", "le_"]),
  timestamp: Criterion.time("LogFilterTimestamp", "log.timestamp", ["before_", "after_"]),
  flow_run_id: Criterion.oneOf("LogFilterFlowRunId", "log.flow_run_id", "uuid", Id, ["any_"]),
  task_run_id: Criterion.oneOf("LogFilterTaskRunId", "log.task_run_id", "uuid", Id, ["any_", "is_null_"]),
  // Any plain term, every +term, no -term: case-insensitive substrings of the message or logger name.
  text: Criterion.custom("LogFilterTextSearch", { query: Schema.String.pipe(Schema.maxLength(200)) }, (sql, c) => {
    const query = parseTextQuery(c.query)
    const contains = (term: string) => sql`${sql.unsafe(searchable)} LIKE ${"%" + term.toLowerCase() + "%"}`
    return [
      ...(query.include.length > 0 ? [sql.or(query.include.map(contains))] : []),
      ...query.exclude.map((term) => sql`NOT (${contains(term)})`),
      ...query.required.map(contains)
    ]
  })
})
export type LogFilter = typeof LogFilter.Type

export const LogSort = Schema.Literal("TIMESTAMP_ASC", "TIMESTAMP_DESC").annotations({ identifier: "LogSort" })
export type LogSort = typeof LogSort.Type

export const ReadLogsBody = Schema.Struct({
  logs: criterion(LogFilter),
  sort: Schema.optionalWith(Schema.NullOr(LogSort), { default: () => "TIMESTAMP_ASC" as const }),
  offset: Schema.optionalWith(Schema.NullOr(Lax.int({ ge: 0 })), { default: () => 0 }),
  limit: LimitField
})
