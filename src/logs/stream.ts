/**
 * Live logs: with server.logs.stream_out_enabled, every log stored is published here, and each
 * /logs/out websocket takes the ones its filter matches. Logs stored by another process on the same
 * PostgreSQL server come too: the storing transaction names them on `baton_logs` (NOTIFY, heard after
 * its commit) and each other process reads them by id, one listener per process.
 */
import { SqlClient } from "@effect/sql"
import type { PgClient } from "@effect/sql-pg"
import { Duration, Effect, PubSub } from "effect"
import * as Notifications from "../database/notifications.ts"
import { inTransaction } from "../database/errors.ts"
import { afterCommit } from "../database/transactions.ts"
import { parseTextQuery } from "../domain/text-search.ts"
import { loop } from "../services/runner.ts"
import { Settings } from "../settings/settings.ts"
import { LogsRepo } from "./repo.ts"
import type { Log, LogCreate, LogFilter } from "./schemas.ts"

/** The PostgreSQL channel the ids of stored logs are announced on, when logs are streamed. */
export const LOGS_CHANNEL = "baton_logs"

/** Log ids per NOTIFY: each takes about 40 bytes of the 8000 a payload may have. */
const IDS_PER_NOTIFY = 150

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
    const sql = yield* SqlClient.SqlClient
    const repo = yield* LogsRepo
    const database = yield* Effect.context<SqlClient.SqlClient | PgClient.PgClient>()
    const pubsub = yield* Effect.acquireRelease(PubSub.sliding<Log>(BACKLOG), PubSub.shutdown)
    const enabled = settings.server.logs.stream_out_enabled
    // Other processes on the same PostgreSQL server stream what this one stores, and the reverse.
    const shared = enabled && (yield* Notifications.sharedOrWarn("logs stream to this process's sockets only"))
    const instance = crypto.randomUUID()

    const publish = (logs: ReadonlyArray<Log>) => (logs.length > 0 ? Effect.asVoid(PubSub.publishAll(pubsub, logs)) : Effect.void)

    /**
     * Stores the logs; when streaming, hands them to this process's subscribers once committed, and
     * names them to the other processes (NOTIFY, sent by the storing transaction at its commit).
     */
    const store = (logs: ReadonlyArray<LogCreate>) =>
      !enabled
        ? repo.create(logs)
        : inTransaction(
          sql,
          Effect.tap(repo.create(logs), (stored) =>
            Effect.zipRight(
              shared ? announce(stored.map((log) => log.id)) : Effect.void,
              afterCommit(publish(stored))
            ))
        )

    const announce = (ids: ReadonlyArray<string>) =>
      Effect.forEach(
        Array.from({ length: Math.ceil(ids.length / IDS_PER_NOTIFY) }, (_, i) => ids.slice(i * IDS_PER_NOTIFY, (i + 1) * IDS_PER_NOTIFY)),
        (chunk) => Notifications.notify(LOGS_CHANNEL, JSON.stringify({ from: instance, ids: chunk })),
        { discard: true }
      ).pipe(Effect.provide(database))

    /** Logs another process stored: read and handed to this process's subscribers. */
    const onPayload = (payload: string) => {
      const data = Notifications.fromOthers(payload, instance)
      if (data === undefined || !Array.isArray(data.ids)) return Effect.void
      const ids = data.ids.filter((id): id is string => typeof id === "string")
      return Effect.flatMap(repo.byIds(ids), publish)
    }

    if (shared) {
      const listen = Notifications.listen({
        channel: LOGS_CHANNEL,
        heartbeatSeconds: settings.server.services.triggers.pg_notify_heartbeat_interval_seconds,
        onPayload
      }).pipe(Effect.provide(database))
      const reconnect = Duration.seconds(settings.server.services.triggers.pg_notify_reconnect_interval_seconds)
      yield* Effect.forkScoped(loop({ name: "logs", loop: "listen", tick: listen }, reconnect))
    }

    /** A subscription to every log stored from now on (by any process on the database), for the scope's life. */
    const subscribe = PubSub.subscribe(pubsub)

    return { enabled, store, subscribe } as const
  }),
  dependencies: [LogsRepo.Default]
}) {}
