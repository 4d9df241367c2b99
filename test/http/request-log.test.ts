import { describe, expect, it } from "@effect/vitest"
import { Effect, HashMap, Layer, List, Logger, LogLevel } from "effect"
import { frontHandlerOf, NodeServer } from "../../src/http/node-server.ts"
import { eventually } from "../support/eventually.ts"
import { abandonedBody } from "../support/raw-http.ts"
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
        // Logged requests all go the platform's way (the edge logs them), none Baton's request path.
        expect(frontHandlerOf(yield* NodeServer)).toBeUndefined()
      })
    )
    it.effect("a client that goes away while sending its body is no server error", () =>
      Effect.gen(function* () {
        yield* abandonedBody
        yield* eventually(Effect.suspend(() =>
          lines.some((l) => l.message === "request" && l.annotations.path === "/v2/api/flows/") ? Effect.void : Effect.fail("not logged yet")
        ))
        const logged = lines.find((l) => l.message === "request" && l.annotations.path === "/v2/api/flows/")!
        expect(lines.filter((l) => l.level === "ERROR").map((l) => String(l.message))).toEqual([])
        expect(logged.annotations.status).toBe(499)
      })
    )
  })
})
