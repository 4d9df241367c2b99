import { FetchHttpClient, HttpApiClient, HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Leadership } from "../src/database/leadership.ts"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { apiServer, apiServerWith, BatonApi, serveApi, HttpServerLive, SettingsLayer } from "../src/index.ts"
import { ProbedApi, ProbedHandlers } from "./http/probe.ts"
import { TestDatabase } from "./support/database.ts"
import { at } from "./support/tree.ts"

const portOf = (server: HttpServer.HttpServer) =>
  server.address._tag === "TcpAddress" ? server.address.port : Number.NaN

describe("embedding and shutdown", () => {
  it.live("embeds the whole server in another program, with an overridden setting, and shuts it down", () =>
    Effect.gen(function* () {
      const home = mkdtempSync(join(tmpdir(), "baton-embed-"))
      const overrides = { home, "server.api.port": 0, "server.services.scheduler.loop_seconds": 7 }

      const firstRun = Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(apiServer({ overrides }))
          const port = portOf(Context.get(context, HttpServer.HttpServer))
          const baton = yield* HttpApiClient.make(BatonApi, { baseUrl: `http://127.0.0.1:${port}/v2/api` })
          expect(yield* baton.root.health()).toBe(true)
          const settings = yield* baton.admin.readSettings()
          expect(at(settings, "server.services.scheduler.loop_seconds")).toBe(7)
          expect(settings.home).toBe(home)
          const sql = Context.get(context, SqlClient.SqlClient)
          yield* sql`INSERT INTO configuration (key, value) VALUES ('embedding-test', ${JSON.stringify({ kept: true })}::jsonb)`
          return port
        })
      )
      const port = yield* firstRun
      // The scope is closed: nothing listens any more.
      const after = yield* Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/v2/api/health`).then(
          () => "answered",
          () => "refused"
        )
      )
      expect(after).toBe("refused")

      const secondRun = Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(apiServer({ overrides }))
          const sql = Context.get(context, SqlClient.SqlClient)
          return yield* sql<{ value: { kept: boolean } }>`SELECT value FROM configuration WHERE key = 'embedding-test'`
        })
      )
      const rows = yield* secondRun
      expect(rows).toEqual([{ value: { kept: true } }])
    }).pipe(Effect.provide(FetchHttpClient.layer)),
    60_000
  )

  // The next two are about the HTTP server and the Layers, not the database: they run on the test
  // file's database instead of opening an embedded one in a home of their own (seconds each).
  it.scopedLive("finishes a request in flight when the server shuts down", () =>
    Effect.gen(function* () {
      const server = serveApi(ProbedApi, ProbedHandlers).pipe(
        Layer.provideMerge(HttpServerLive),
        Layer.provide(Leadership.Default),
        Layer.provideMerge(TestDatabase),
        Layer.provideMerge(SettingsLayer({ "server.api.port": 0 }))
      )
      const answer = yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(server)
          const port = portOf(Context.get(context, HttpServer.HttpServer))
          const inFlight = fetch(`http://127.0.0.1:${port}/v2/api/probe/slow?ms=700`).then(async (r) => ({
            status: r.status,
            body: await r.json()
          }))
          yield* Effect.sleep("150 millis")
          return inFlight
        })
      )
      expect(yield* Effect.promise(() => answer)).toEqual({ status: 200, body: "done" })
    }),
    60_000
  )

  it.scopedLive("runs the API without services and the services without the API", () =>
    Effect.gen(function* () {
      const apiOnly = apiServerWith({ services: false }).pipe(
        Layer.provideMerge(TestDatabase),
        Layer.provideMerge(SettingsLayer({ "server.api.port": 0 }))
      )
      const status = yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(apiOnly)
          const port = portOf(Context.get(context, HttpServer.HttpServer))
          return yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/v2/api/ready`).then((r) => r.status))
        })
      )
      expect(status).toBe(200)
    }),
    60_000
  )
})
