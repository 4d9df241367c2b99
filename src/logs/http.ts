import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { LogsRepo } from "./repo.ts"
import { LogStream } from "./stream.ts"

export const LogsLive = apiGroup(BatonApi, "logs", (handlers) =>
  Effect.gen(function* () {
    const logs = yield* LogsRepo
    const stream = yield* LogStream
    return handlers
      .handle("create", ({ payload }) => Effect.as(stream.store(payload), null))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          logs.filter({ filter: payload.logs, sort: payload.sort ?? "TIMESTAMP_ASC", offset: payload.offset ?? 0, limit })
        )
      )
  })
).pipe(Layer.provide([LogStream.Default, LogsRepo.Default]))
