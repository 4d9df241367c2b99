import { PgClient } from "@effect/sql-pg"
import { Leadership } from "../../src/database/leadership.ts"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { serveEmbedded } from "../../src/database/embedded.ts"
import { ApiLive, HttpServerLive } from "../../src/server.ts"
import { layer as settingsLayer } from "../../src/settings/settings.ts"
import { API_VERSION, COMPATIBLE_SERVER_VERSION } from "../../src/version.ts"
import { client, request, testServer } from "../support/server.ts"

describe("root routes", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("GET /health, /version, /hello and /admin/version answer as the reference", () =>
      Effect.gen(function* () {
        const health = yield* request("GET", "/health")
        expect(health.status).toBe(200)
        expect(health.body).toBe(true)
        expect((yield* request("GET", "/version")).body).toBe(API_VERSION)
        expect((yield* request("GET", "/hello")).body).toBe("👋")
        const version = yield* request("GET", "/admin/version")
        expect(version.body).toBe(COMPATIBLE_SERVER_VERSION)
        expect(Number((version.body as string).split(".")[0])).toBe(3)
      })
    )

    it.effect("GET /ready answers OK while the database answers", () =>
      Effect.gen(function* () {
        const ready = yield* request("GET", "/ready")
        expect(ready.status).toBe(200)
        expect(ready.body).toEqual({ message: "OK" })
      })
    )

    it.effect("GET /health answers before the router with the same body and headers, whatever version header it carries", () =>
      Effect.gen(function* () {
        for (const path of ["/health", "/health/"]) {
          const res = yield* request("GET", path, { headers: { origin: "http://ui.example" } })
          expect(res.status).toBe(200)
          expect(res.text).toBe("true")
          expect(res.headers.get("content-type")).toBe("application/json")
          expect(res.headers.get("access-control-allow-origin")).toBe("*")
        }
        // As the reference's /health and /version, outside its version check.
        for (const path of ["/health", "/version"]) {
          const anyVersion = yield* request("GET", path, { headers: { "x-service-api-version": "nonsense" } })
          expect(anyVersion.status).toBe(200)
        }
        expect((yield* request("GET", "/hello", { headers: { "x-service-api-version": "nonsense" } })).status).toBe(400)
        const withQuery = yield* request("GET", "/health?probe=1")
        expect(withQuery.status).toBe(200)
        expect(withQuery.body).toBe(true)
      })
    )

    it.effect("POST /health is 405, not 500", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/health")
        expect(res.status).toBe(405)
        expect(res.body).toEqual({ detail: "Method Not Allowed" })
      })
    )

    it.effect("the typed client derived from the Api reads the same answers", () =>
      Effect.gen(function* () {
        const api = yield* client
        expect(yield* api.root.health()).toBe(true)
        expect(yield* api.root.hello()).toBe("👋")
        expect(yield* api.root.ready()).toEqual({ message: "OK" })
      })
    )
  })
})

describe("GET /ready when the database goes away", () => {
  it.live("answers 503 with the reference's message once the database stops answering", () =>
    Effect.gen(function* () {
      const socketDir = fs.mkdtempSync(path.join(os.tmpdir(), "baton-ready-"))
      const databaseScope = yield* Scope.make()
      yield* serveEmbedded({ socketDir }).pipe(Scope.extend(databaseScope))
      const server = ApiLive.pipe(
        Layer.provideMerge(HttpServerLive),
        Layer.provide(Leadership.Default),
        Layer.provideMerge(PgClient.layer({ host: socketDir, username: "postgres", database: "postgres", maxConnections: 1 })),
        Layer.provideMerge(
          settingsLayer({ "server.api.port": 0, "server.database.connection_timeout": 1 })
        )
      )
      yield* Effect.scoped(
        Effect.gen(function* () {
          const before = yield* request("GET", "/ready")
          expect(before.status).toBe(200)
          yield* Scope.close(databaseScope, Exit.void)
          const after = yield* request("GET", "/ready")
          expect(after.status).toBe(503)
          expect(after.body).toEqual({ message: "Database is not available" })
          expect((yield* request("GET", "/health")).body).toBe(true)
        }).pipe(Effect.provide(server))
      )
    }),
    60_000
  )
})
