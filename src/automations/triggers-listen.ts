/**
 * Listening for automation changes other replicas announce (PostgreSQL LISTEN/NOTIFY), applied to
 * the triggers engine's index at once.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import * as Notifications from "../database/notifications.ts"
import { Settings } from "../settings/settings.ts"
import { AUTOMATION_CHANGES_CHANNEL } from "./changes.ts"
import { AutomationsRepo } from "./repo.ts"
import type { TriggerIndex } from "./triggers-index.ts"

export const makeListenForChanges = (
  index: TriggerIndex,
  serialised: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const automationsRepo = yield* AutomationsRepo
    const settings = yield* Settings

    /**
     * Listens until the connection is taken as lost (its heartbeats stopped coming back, see
     * database/notifications.ts); the service loop listens again after
     * pg_notify_reconnect_interval_seconds.
     */
    return Effect.gen(function* () {
      // The embedded database has one server process: nothing to hear from.
      if (!(yield* automationsRepo.sharedServer)) return yield* Effect.never
      const onPayload = (payload: string) =>
        Effect.gen(function* () {
          let data: { automation_id?: unknown; event_type?: unknown }
          try {
            data = JSON.parse(payload)
          } catch {
            return
          }
          const kind = data.event_type
          if (typeof data.automation_id !== "string" || (kind !== "created" && kind !== "updated" && kind !== "deleted")) return
          yield* serialised(Effect.gen(function* () {
            if (index.isStarted()) yield* index.applyChanges([{ id: data.automation_id as string, kind }])
          }))
        })
      yield* index.reconcile(false).pipe(serialised)
      return yield* Notifications.listen({
        channel: AUTOMATION_CHANGES_CHANNEL,
        heartbeatSeconds: settings.server.services.triggers.pg_notify_heartbeat_interval_seconds,
        onPayload
      }).pipe(Effect.provideService(PgClient.PgClient, pg), Effect.provideService(SqlClient.SqlClient, sql))
    })
  })
