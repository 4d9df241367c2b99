/**
 * `baton server start` as a user runs it: with a prefect package on PYTHONPATH (which only the
 * python3 the server asks sees), it serves that package's UIs and says so; with none, it says how
 * to get one and shows its own page at /.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { onServer, scopedDatabase, seededHome } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { ensureBundle, scopedServerProcess } from "../support/server-process.ts"
import { makeFakePrefect, NAVIGATION, packageIndex, PLACEHOLDER } from "./fixture.ts"

const hasPython3 = spawnSync("python3", ["--version"]).status === 0

const quiet = { BATON_SERVER_SERVICES_LATE_RUNS_ENABLED: "false", BATON_SERVER_SERVICES_SCHEDULER_ENABLED: "false" }

/** A server process on its own home (and, against PostgreSQL, its own database) with `env`. */
const server = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const home = yield* seededHome
    const database = onServer() ? yield* scopedDatabase({ migrated: true }) : undefined
    return yield* scopedServerProcess({ home, env: { ...quiet, ...env }, ...(database?.url ? { databaseUrl: database.url } : {}) })
  })

const get = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(url, { headers, redirect: "manual" })
    return { status: response.status, type: response.headers.get("content-type"), text: await response.text() }
  })

describe.concurrent("baton server start and the UI", () => {
  it.scopedLive.skipIf(!hasPython3)("serves the UIs of the prefect package python3 finds on PYTHONPATH, and says so", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const fake = makeFakePrefect({ v1: true, v2: true })
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(fake.root, { recursive: true, force: true })))
      const baton = yield* server({ PYTHONPATH: fake.root, BATON_SERVER_UI_DISCOVER_PREFECT_PACKAGE: "true" })
      const root = baton.api.slice(0, -"/v2/api".length)
      // Printed once the server is built, which /ready may answer a moment before.
      yield* eventually(Effect.sync(() => {
        const lines = baton.output().split("\n")
        expect(lines).toContain(`Baton 0.1.0: UI at ${root}/ from ${fake.packageDirectory}/server/ui (found by python3)`)
        expect(lines).toContain(`Baton 0.1.0: UI (v2) at ${root}/v2/ from ${fake.packageDirectory}/server/ui-v2 (found by python3)`)
      }))
      expect((yield* get(`${root}/`, NAVIGATION)).text).toBe(packageIndex("v1").replaceAll(PLACEHOLDER, ""))
      expect((yield* get(`${root}/v2/`, NAVIGATION)).text).toBe(packageIndex("v2").replaceAll(PLACEHOLDER, "/v2"))
      expect(JSON.parse((yield* get(`${root}/ui-settings`)).text)).toMatchObject({
        available_uis: ["v1", "v2"],
        v1_base_url: "/",
        v2_base_url: "/v2"
      })
      expect((yield* get(`${baton.api}/health`)).text).toBe("true")
    }),
    120_000
  )

  it.scopedLive("without a UI, says how to get one and shows a browser its own page", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const baton = yield* server({ BATON_SERVER_UI_DISCOVER_PREFECT_PACKAGE: "false" })
      const root = baton.api.slice(0, -"/v2/api".length)
      yield* eventually(Effect.sync(() => expect(baton.output().split("\n")).toContain(
        "Baton 0.1.0: No UI found. To get one: pip install prefect (Baton serves the UIs it ships with), or set server.ui.static_directory to a built UI (docs/ui.md)."
      )))
      const page = yield* get(`${root}/`, NAVIGATION)
      expect(page.status).toBe(200)
      expect(page.type).toBe("text/html; charset=utf-8")
      expect(page.text).toContain("No web UI is served")
      const json = yield* get(`${root}/`)
      expect(json.status).toBe(404)
      expect(JSON.parse(json.text)).toEqual({ detail: "Not Found" })
    }),
    120_000
  )
})
