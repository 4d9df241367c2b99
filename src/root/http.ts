import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Database } from "../database/client.ts"
import { BatonApi } from "../http/api.ts"
import { API_VERSION } from "../version.ts"
import { DatabaseNotReady } from "./api.ts"

export const RootLive =
  HttpApiBuilder.group(BatonApi, "root", (handlers) =>
    Effect.gen(function* () {
      const database = yield* Database
      return handlers
        .handle("health", () => Effect.succeed(true))
        .handle("version", () => Effect.succeed(API_VERSION))
        .handle("hello", () => Effect.succeed("👋"))
        .handle("ready", () =>
          database.ping.pipe(
            Effect.as({ message: "OK" }),
            Effect.catchAll(() => new DatabaseNotReady({ message: "Database is not available" }))
          )
        )
    })
  )
