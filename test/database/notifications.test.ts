/**
 * Listeners started together send their LISTEN statements one at a time on the process's one listen
 * connection (src/database/notifications.ts): node-postgres warns on stderr about a statement sent
 * while its connection runs another, and its next major version refuses it.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Array as Arr, Context, Duration, Effect, Fiber, Layer } from "effect"
import * as Notifications from "../../src/database/notifications.ts"
import { onServer, scopedDatabase } from "../support/database.ts"
import { overlappingQueries } from "../support/overlapping-queries.ts"

describe.runIf(onServer())("listeners started together", () => {
  it.scopedLive("send their LISTEN one at a time, and each hears what is announced on its channel", () =>
    Effect.gen(function* () {
      const database = yield* scopedDatabase({ migrated: true })
      const context = yield* Layer.build(database.connect())
      const seen = yield* overlappingQueries((text) => text.startsWith("LISTEN"))
      const channels = Arr.range(1, 5).map((i) => `baton_test_listen_${i}`)
      const heard = new Map<string, Array<string>>(channels.map((channel) => [channel, []]))
      const fibers = yield* Effect.forEach(channels, (channel) =>
        Effect.fork(
          Notifications.listen({ channel, heartbeatSeconds: 60, onPayload: (payload) => Effect.sync(() => void heard.get(channel)!.push(payload)) }).pipe(
            Effect.provide(context)
          )
        ))
      // Announced on every channel until each has heard it (an announcement before a LISTEN took effect is lost).
      const sql = Context.get(context, SqlClient.SqlClient)
      const message = (channel: string) => JSON.stringify({ to: channel })
      const deaf = () => channels.filter((channel) => !heard.get(channel)!.includes(message(channel)))
      for (let i = 0; i < 250 && deaf().length > 0; i++) {
        yield* Effect.forEach(deaf(), (channel) => Notifications.notify(channel, message(channel))).pipe(Effect.provideService(SqlClient.SqlClient, sql))
        yield* Effect.sleep(Duration.millis(20))
      }
      expect(deaf()).toEqual([])

      expect(seen).toEqual([])
      yield* Fiber.interruptAll(fibers)
    }), { timeout: 60_000 })
})
