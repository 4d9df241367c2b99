import { FetchHttpClient, HttpApiClient, HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { apiServer, apiServerWith, BatonApi, DatabaseLive, serveApi, HttpServerLive, SettingsLayer } from "../src/index.ts"
import { ProbedApi, ProbedHandlers } from "./http/probe.ts"

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
          const settings = (yield* baton.admin.readSettings()) as any
          expect(settings.server.services.scheduler.loop_seconds).toBe(7)
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

  it.live("finishes a request in flight when the server shuts down", () =>
    Effect.gen(function* () {
      const home = mkdtempSync(join(tmpdir(), "baton-inflight-"))
      const server = serveApi(ProbedApi, ProbedHandlers).pipe(
        Layer.provideMerge(HttpServerLive),
        Layer.provideMerge(DatabaseLive),
        Layer.provideMerge(SettingsLayer({ home, "server.api.port": 0 }))
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

  it.live("runs the API without services and the services without the API", () =>
    Effect.gen(function* () {
      const home = mkdtempSync(join(tmpdir(), "baton-split-"))
      const apiOnly = apiServerWith({ services: false }).pipe(
        Layer.provideMerge(DatabaseLive),
        Layer.provideMerge(SettingsLayer({ home, "server.api.port": 0 }))
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

interface Spawned {
  readonly lines: Array<string>
  readonly stderr: Array<string>
  readonly exit: Promise<number | null>
  readonly child: ReturnType<typeof spawn>
}

const baton = (args: ReadonlyArray<string>, env: Record<string, string>): Spawned => {
  const child = spawn(process.execPath, [fileURLToPath(new URL("../bin/baton.mjs", import.meta.url)), ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const lines: Array<string> = []
  const stderr: Array<string> = []
  child.stdout!.on("data", (chunk) => lines.push(...String(chunk).split("\n").filter(Boolean)))
  child.stderr!.on("data", (chunk) => stderr.push(...String(chunk).split("\n").filter(Boolean)))
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return { lines, stderr, exit, child }
}

const waitFor = async (check: () => string | undefined, ms: number): Promise<string> => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const found = check()
    if (found !== undefined) return found
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error("timed out")
}

describe("the baton command", () => {
  it.live("starts the server, answers, stops cleanly on SIGTERM and starts again on the same data", () =>
    Effect.promise(async () => {
      const home = mkdtempSync(join(tmpdir(), "baton-cli-"))
      for (const round of [1, 2]) {
        const proc = baton(["server", "start", "--port", "0"], { BATON_HOME: home })
        const line = await waitFor(() => proc.lines.find((l) => l.includes("API at ")), 30_000)
        const url = line.slice(line.indexOf("http"))
        const ready = await fetch(`${url}/ready`)
        expect(ready.status, `round ${round}`).toBe(200)
        proc.child.kill("SIGTERM")
        expect(await proc.exit).toBe(0)
        expect(proc.stderr.join("\n")).toBe("")
      }
    }),
    90_000
  )

  it.live("prints the settings with secrets obfuscated, and stops on a bad value with one line", () =>
    Effect.promise(async () => {
      const ok = baton(["settings"], { BATON_API_KEY: "hidden-key", BATON_SERVER_API_PORT: "4321" })
      expect(await ok.exit).toBe(0)
      const report = JSON.parse(ok.lines.join("\n"))
      expect(report.api.key).toBe("********")
      expect(report.server.api.port).toBe(4321)
      expect(ok.lines.join("\n")).not.toContain("hidden-key")

      const bad = baton(["server", "start"], { BATON_SERVER_API_PORT: "abc" })
      expect(await bad.exit).toBe(1)
      expect(bad.stderr).toEqual([expect.stringContaining("BATON_SERVER_API_PORT")])
      expect(bad.stderr[0]).toContain('"abc"')
      expect(bad.stderr[0]).toContain("integer")
    }),
    60_000
  )
})
