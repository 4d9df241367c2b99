import { describe, expect, it } from "@effect/vitest"
import { Effect, HashMap, Layer, List, Logger, LogLevel } from "effect"
import { request, testServer } from "../support/server.ts"

/** Every log line of the server, with its annotations. */
const lines: Array<{ level: string; message: unknown; annotations: Record<string, unknown> }> = []

const capture = Logger.make(({ annotations, logLevel, message }) => {
  lines.push({
    level: logLevel.label,
    message: List.isList(message) ? List.toArray(message)[0] : Array.isArray(message) ? message[0] : message,
    annotations: Object.fromEntries(HashMap.toEntries(annotations))
  })
})

const logged = testServer().pipe(
  Layer.provide(Logger.replace(Logger.defaultLogger, capture)),
  Layer.provide(Logger.minimumLogLevel(LogLevel.Debug))
)

describe("request logging", () => {
  it.layer(logged, { timeout: 60_000 })((it) => {
    it.effect("logs each request at debug with method, path, status and duration", () =>
      Effect.gen(function* () {
        yield* request("GET", "/health")
        yield* request("POST", "/health")
        const requests = lines.filter((l) => l.message === "request")
        expect(requests.map((l) => [l.level, l.annotations.method, l.annotations.path, l.annotations.status])).toEqual(
          expect.arrayContaining([
            ["DEBUG", "GET", "/v2/api/health", 200],
            ["DEBUG", "POST", "/v2/api/health", 405]
          ])
        )
        for (const line of requests) expect(typeof line.annotations.duration_ms).toBe("number")
      })
    )
  })
})
