import { apiGroup } from "../http/group.ts"
import { Effect } from "effect"
import { SqlClient } from "@effect/sql"
import { ping } from "../database/client.ts"
import { Settings } from "../settings/settings.ts"
import { BatonApi } from "../api.ts"
import { API_VERSION } from "../version.ts"
import { DatabaseNotReady } from "./api.ts"

export const RootLive =
  apiGroup(BatonApi, "root", (handlers) =>
    Effect.gen(function* () {
      // /ready asks the database itself, with the handlers' own connection pool.
      const context = yield* Effect.context<SqlClient.SqlClient | Settings>()
      const databaseAnswers = Effect.provide(ping, context)
      return handlers
        .handle("health", () => Effect.succeed(true))
        .handle("version", () => Effect.succeed(API_VERSION))
        .handle("hello", () => Effect.succeed("👋"))
        .handle("ready", () =>
          databaseAnswers.pipe(
            Effect.as({ message: "OK" }),
            Effect.catchAll(() => new DatabaseNotReady({ message: "Database is not available" }))
          )
        )
    })
  )
