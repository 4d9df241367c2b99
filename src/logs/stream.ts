/**
 * Live logs: every log the server stores is published here (when server.logs.stream_out_enabled),
 * and each /logs/out websocket takes the ones its filter matches.
 */
import { Effect, PubSub } from "effect"
import { Settings } from "../settings/settings.ts"
import type { Log, LogFilter } from "./schemas.ts"
import { parseTextQuery } from "../domain/text-search.ts"

/** Logs a slow subscriber may fall behind by before the oldest are dropped for it. */
const BACKLOG = 1024

/** Whether `log` is one `filter` asks for: the same criteria /logs/filter applies in SQL. */
export const logMatches = (log: Log, filter: LogFilter | null | undefined): boolean => {
  if (filter === null || filter === undefined) return true
  const checks: Array<boolean> = []
  const { level, timestamp, flow_run_id, task_run_id, text } = filter
  if (level) {
    if (level.ge_ != null) checks.push(log.level >= level.ge_)
    if (level.le_ != null) checks.push(log.level <= level.le_)
  }
  if (timestamp) {
    if (timestamp.before_ != null) checks.push(log.timestamp.getTime() <= timestamp.before_.getTime())
    if (timestamp.after_ != null) checks.push(log.timestamp.getTime() >= timestamp.after_.getTime())
  }
  if (flow_run_id?.any_ != null) checks.push(log.flow_run_id !== null && flow_run_id.any_.includes(log.flow_run_id))
  if (task_run_id) {
    if (task_run_id.any_ != null) checks.push(log.task_run_id !== null && task_run_id.any_.includes(log.task_run_id))
    if (task_run_id.is_null_ != null) checks.push((log.task_run_id === null) === task_run_id.is_null_)
  }
  if (text) {
    const query = parseTextQuery(text.query)
    const searchable = `${log.message} ${log.name}`.toLowerCase()
    const contains = (term: string) => searchable.includes(term.toLowerCase())
    if (query.include.length > 0) checks.push(query.include.some(contains))
    checks.push(...query.exclude.map((term) => !contains(term)), ...query.required.map(contains))
  }
  if (checks.length === 0) return true
  return filter.operator === "or_" ? checks.some(Boolean) : checks.every(Boolean)
}

export class LogStream extends Effect.Service<LogStream>()("baton/LogStream", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    const pubsub = yield* Effect.acquireRelease(PubSub.sliding<Log>(BACKLOG), PubSub.shutdown)
    const enabled = settings.server.logs.stream_out_enabled

    /** Hands stored logs to the live subscribers (nothing when streaming is off). */
    const publish = (logs: ReadonlyArray<Log>) => (enabled && logs.length > 0 ? Effect.asVoid(PubSub.publishAll(pubsub, logs)) : Effect.void)

    /** A subscription to every log published from now on, for the scope's life. */
    const subscribe = PubSub.subscribe(pubsub)

    return { enabled, publish, subscribe } as const
  })
}) {}
