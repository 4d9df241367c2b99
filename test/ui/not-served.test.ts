import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, List, Logger } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { layer as settingsLayer, type SettingsOverrides } from "../../src/settings/settings.ts"
import { UiStatic } from "../../src/ui/bundle.ts"
import { uiSettingsOf, uiSettingsPaths } from "../../src/ui/ui-settings.ts"
import { Settings } from "../../src/settings/settings.ts"
import { request, testServer } from "../support/server.ts"
import { makeFixture, NAVIGATION, removeFixture } from "./fixture.ts"

const fixture = makeFixture()
const empty = path.join(fixture.root, "empty")
const noIndex = path.join(fixture.root, "no-index")
fs.mkdirSync(empty)
fs.mkdirSync(noIndex)
fs.writeFileSync(path.join(noIndex, "app.js"), "1")
afterAll(() => removeFixture(fixture))

const notFound = { detail: "Not Found" }

/** Loads the bundle the overrides name, with every log line at warning or above. */
const load = (overrides: SettingsOverrides) =>
  Effect.gen(function* () {
    const warnings: Array<string> = []
    const capture = Logger.make(({ logLevel, message }) => {
      if (logLevel._tag === "Warning" || logLevel._tag === "Error") {
        warnings.push(String(List.isList(message) ? List.toArray(message)[0] : Array.isArray(message) ? message[0] : message))
      }
    })
    const { bundles } = yield* Effect.scoped(
      Effect.flatMap(UiStatic, Effect.succeed).pipe(
        Effect.provide(UiStatic.Default.pipe(Layer.provide(settingsLayer(overrides)))),
        Effect.provide(Logger.replace(Logger.defaultLogger, capture))
      )
    )
    return { bundles, warnings }
  })

describe("when no UI can be served", () => {
  it.effect("warns once, saying why, for a missing, empty, non-folder or unbuilt directory", () =>
    Effect.gen(function* () {
      const cases: Array<[string, string]> = [
        [path.join(fixture.root, "missing"), "does not exist"],
        [empty, "is empty"],
        [path.join(fixture.root, "secret.txt"), "is not a directory"],
        [noIndex, "has no index.html"]
      ]
      for (const [dir, reason] of cases) {
        const { bundles, warnings } = yield* load({ "server.ui.static_directory": dir })
        expect(bundles, dir).toEqual([])
        expect(warnings, dir).toHaveLength(1)
        expect(warnings[0], dir).toContain(dir)
        expect(warnings[0], dir).toContain(reason)
        expect(warnings[0], dir).toContain("The API is served as usual")
      }
    })
  )

  it.effect("warns when the serve base lies under the API base path", () =>
    Effect.gen(function* () {
      const { bundles, warnings } = yield* load({ "server.ui.static_directory": fixture.dir, "server.ui.serve_base": "/v2/api/ui" })
      expect(bundles).toEqual([])
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("/v2/api")
    })
  )

  it.effect("serves nothing and says nothing when the UI is disabled or no directory is set", () =>
    Effect.gen(function* () {
      for (const overrides of [
        { "server.ui.enabled": false, "server.ui.static_directory": fixture.dir },
        { "server.ui.enabled": false, "server.ui.static_directory": path.join(fixture.root, "missing") },
        { "server.ui.discover_prefect_package": false }
      ]) {
        const { bundles, warnings } = yield* load(overrides)
        expect(bundles).toEqual([])
        expect(warnings).toEqual([])
      }
    })
  )

  it.effect("removes its copy when the server stops", () =>
    Effect.gen(function* () {
      const { bundles } = yield* load({ "server.ui.static_directory": fixture.dir })
      expect(bundles).toHaveLength(1)
      const copy = bundles[0]!.directory
      expect(fs.existsSync(copy)).toBe(false)
      expect(fs.existsSync(path.join(fixture.dir, "index.html"))).toBe(true)
    })
  )

  it.effect("/ui-settings: the API URL falls back to api.url, then to the base path; paths never inside the API", () =>
    Effect.gen(function* () {
      const settingsOf = (overrides: SettingsOverrides) => Effect.provide(Settings, settingsLayer(overrides))
      const plain = yield* settingsOf({})
      expect(uiSettingsOf(plain, [])).toEqual({
        api_url: "/v2/api",
        csrf_enabled: false,
        auth: null,
        flags: [],
        default_ui: "v1",
        available_uis: [],
        v1_base_url: null,
        v2_base_url: null
      })
      expect(uiSettingsOf(yield* settingsOf({ "api.url": "http://10.0.0.5:4200/v2/api" }), []).api_url).toBe(
        "http://10.0.0.5:4200/v2/api"
      )
      expect(
        uiSettingsOf(yield* settingsOf({ "api.url": "http://a/v2/api", "server.ui.api_url": "http://b/v2/api" }), []).api_url
      ).toBe("http://b/v2/api")
      expect(uiSettingsOf(yield* settingsOf({ "server.api.base_path": "/api/" }), []).api_url).toBe("/api")
      expect([...uiSettingsPaths(plain)].sort()).toEqual(["/ui-settings", "/v2/ui-settings"])
      expect([...uiSettingsPaths(yield* settingsOf({ "server.api.base_path": "/api" }))]).toEqual(["/ui-settings"])
      expect([...uiSettingsPaths(yield* settingsOf({ "server.ui.serve_base": "/v2/api/ui" }))].sort()).toEqual([
        "/ui-settings",
        "/v2/ui-settings"
      ])
    })
  )
})

describe("a server whose UI directory is missing", () => {
  it.layer(testServer({ overrides: { "server.ui.static_directory": path.join(fixture.root, "missing") } }), { timeout: 60_000 })(
    (it) => {
      it.effect("serves the API as usual, /ui-settings with no UI, and JSON 404s outside the API", () =>
        Effect.gen(function* () {
          expect((yield* request("GET", "/health")).body).toBe(true)
          expect((yield* request("POST", "/flows/", { body: { name: "f" } })).status).toBe(201)
          for (const at of ["/dashboard", "/index.html"]) {
            const res = yield* request("GET", at, { fromRoot: true, headers: NAVIGATION })
            expect(res.status, at).toBe(404)
            expect(res.body, at).toEqual(notFound)
          }
          // A browser at the root gets Baton's own page, which says how to add a UI.
          const page = yield* request("GET", "/", { fromRoot: true, headers: NAVIGATION })
          expect(page.status).toBe(200)
          expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
          expect(page.text).toContain("No web UI is served")
          const settings = yield* request("GET", "/ui-settings", { fromRoot: true })
          expect(settings.body.available_uis).toEqual([])
          expect(settings.body.v1_base_url).toBeNull()
        })
      )
    }
  )
})
