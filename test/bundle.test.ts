/**
 * The bundle as `npm run build` makes it (scripts/build.mjs), for what an idle server keeps in
 * memory (docs/performance.md, "Memory and start-up"): its files are ASCII only (V8 keeps a module's
 * source as long as the process runs, two bytes a character as soon as one is not Latin-1); it
 * imports none of the packages loaded on first use at its top; and each of those still loads when
 * first used, from where the bundle is: a WebSocket (ws), schedules (cron-parser, rrule, luxon), a
 * parameter schema with a pattern (ajv, re2js) and a generated run name (unique-names-generator).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { BUNDLE, ensureBundle, ok, scopedEmptyHome, scopedServerProcess } from "./support/server-process.ts"
import { connectTo, opened } from "./support/websocket.ts"

const ON_FIRST_USE = ["ajv", "cron-parser", "ini", "luxon", "mime", "re2js", "rrule", "toml", "unique-names-generator", "ws", "yaml"]

const bundleFiles = () => {
  const dir = path.dirname(BUNDLE)
  return fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((name) => name.endsWith(".js")).map((name) => path.join(dir, name))
}

describe("the bundle", () => {
  it.live("is ASCII only and imports no package it loads on first use", () =>
    Effect.promise(async () => {
      await ensureBundle()
      const files = bundleFiles()
      expect(files.length).toBeGreaterThan(1)
      for (const file of files) {
        const text = fs.readFileSync(file, "utf8")
        expect(/[^\x00-\x7f]/.exec(text)?.[0], file).toBeUndefined()
        for (const name of ON_FIRST_USE) {
          expect(text, `${file} imports ${name}`).not.toMatch(new RegExp(`^import [^;]*from "${name}(/[^"]*)?";$`, "m"))
        }
      }
    }), 180_000)

  it.scopedLive("loads them when they are first used", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const home = yield* scopedEmptyHome
      const server = yield* scopedServerProcess({ home })
      const socket = opened(yield* connectTo(server.api, "/events/out"))
      yield* Effect.addFinalizer(() => Effect.sync(() => socket.close()))
      socket.send({ type: "auth", token: null })
      expect(yield* Effect.promise(() => socket.next())).toEqual({ type: "auth_success" })

      const flow = (yield* Effect.promise(() => ok(server, "POST", "/flows/", { name: "first-use" }, 201))) as unknown as { id: string }
      const deployment = (yield* Effect.promise(() =>
        ok(server, "POST", "/deployments/", {
          name: "first-use",
          flow_id: flow.id,
          paused: true,
          schedules: [
            { schedule: { cron: "0 9 * * 1-5", timezone: "America/New_York" } },
            { schedule: { rrule: "FREQ=DAILY;INTERVAL=2", timezone: "Europe/Berlin" } }
          ],
          parameter_openapi_schema: { type: "object", properties: { code: { type: "string", pattern: "^[a-z]+$" } } }
        }, 201)
      )) as unknown as { id: string; schedules: Array<unknown> }
      expect(deployment.schedules).toHaveLength(2)
      yield* Effect.promise(() => ok(server, "POST", `/deployments/${deployment.id}/schedule`, { min_runs: 4 }))
      const scheduled = (yield* Effect.promise(() =>
        ok(server, "POST", "/flow_runs/filter", { deployments: { id: { any_: [deployment.id] } } })
      )) as unknown as Array<{ expected_start_time: string }>
      expect(scheduled.length).toBeGreaterThanOrEqual(4)

      const run = (yield* Effect.promise(() =>
        ok(server, "POST", `/deployments/${deployment.id}/create_flow_run`, { parameters: { code: "abc" } }, 201)
      )) as unknown as { name: string }
      expect(run.name).toMatch(/^[a-z]+-[a-z]+$/)
      const refused = yield* Effect.promise(() =>
        ok(server, "POST", `/deployments/${deployment.id}/create_flow_run`, { parameters: { code: "ABC" } }, 409)
      )
      expect(refused).toEqual({
        detail: "Error creating flow run: Validation failed for field 'code'. Failure reason: 'ABC' does not match '^[a-z]+$'"
      })
    }), 180_000)
})
