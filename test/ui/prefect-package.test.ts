/**
 * The UIs of a prefect package (named by server.ui.prefect_package_directory): the default one at
 * the serve base, the second one at <base>/v2 (or at the base when alone), /ui-settings saying
 * which are served where, favicons from their ico/ folders, the API still at /v2/api.
 */
import { afterAll, describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import { request, testServer } from "../support/server.ts"
import { makeFakePrefect, NAVIGATION, PACKAGE_ICONS, packageIndex, PLACEHOLDER, rawRequest } from "./fixture.ts"

const both = makeFakePrefect({ v1: true, v2: true })
const onlyUi = makeFakePrefect({ v1: true, v2: false })
const onlyV2 = makeFakePrefect({ v1: false, v2: true })
afterAll(() => {
  for (const fake of [both, onlyUi, onlyV2]) fs.rmSync(fake.root, { recursive: true, force: true })
})

const notFound = { detail: "Not Found" }

/** /ui-settings at each of `paths`, each expected to answer `expected` for the served UIs. */
const uiSettingsAt = (paths: ReadonlyArray<string>, expected: Record<string, unknown>) =>
  Effect.forEach(paths, (at) =>
    Effect.map(request("GET", at, { fromRoot: true }), (res) => {
      expect(res.status, at).toBe(200)
      expect(res.body, at).toMatchObject(expected)
    })
  )

const page = (at: string, headers: Record<string, string> = NAVIGATION) =>
  Effect.map(rawRequest("GET", at, headers), (res) => ({ ...res, text: res.body.toString() }))

describe("both UIs of a prefect package", () => {
  layer(testServer({ overrides: { "server.ui.prefect_package_directory": both.packageDirectory } }), { timeout: 60_000 })((it) => {
    it.effect("serves the default UI at / and the second at /v2/, each with its own base in place of the placeholder", () =>
      Effect.gen(function* () {
        for (const at of ["/", "/index.html", "/flows/flow/abc"]) {
          const res = yield* page(at)
          expect(res.status, at).toBe(200)
          expect(res.text, at).toBe(packageIndex("v1").replaceAll(PLACEHOLDER, ""))
        }
        for (const at of ["/v2", "/v2/", "/v2/index.html", "/v2/runs/flow-run/abc"]) {
          const res = yield* page(at)
          expect(res.status, at).toBe(200)
          expect(res.text, at).toBe(packageIndex("v2").replaceAll(PLACEHOLDER, "/v2"))
        }
        expect((yield* page("/assets/app-v1.js", {})).text).toBe(`export const base = ""`)
        expect((yield* page("/v2/assets/app-v2.js", {})).text).toBe(`export const base = "/v2"`)
        // Each UI's files only below its own base.
        expect((yield* page("/assets/app-v2.js", {})).status).toBe(404)
        expect((yield* page("/v2/assets/app-v1.js", {})).status).toBe(404)
      })
    )

    it.effect("keeps /v2/api the API's", () =>
      Effect.gen(function* () {
        expect((yield* request("GET", "/health")).body).toBe(true)
        expect((yield* request("POST", "/flows/", { body: { name: "beside-the-ui" } })).status).toBe(201)
        const missing = yield* request("GET", "/no-such-route", { headers: NAVIGATION })
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual(notFound)
        expect((yield* request("GET", "/docs", { headers: NAVIGATION })).text).not.toContain("Prefect UI")
      })
    )

    it.effect("reports both UIs and where they are in /ui-settings, the first one the default", () =>
      uiSettingsAt(["/ui-settings", "/v2/ui-settings"], {
        default_ui: "v1",
        available_uis: ["v1", "v2"],
        v1_base_url: "/",
        v2_base_url: "/v2"
      })
    )

    it.effect("serves /favicon.ico and /favicon-dark.ico from each UI's ico/ folder", () =>
      Effect.gen(function* () {
        const cases: Array<[string, Uint8Array]> = [
          ["/favicon.ico", PACKAGE_ICONS.v1],
          ["/favicon-dark.ico", PACKAGE_ICONS.v1Dark],
          ["/ico/favicon.ico", PACKAGE_ICONS.v1],
          ["/v2/favicon.ico", PACKAGE_ICONS.v2]
        ]
        for (const [at, bytes] of cases) {
          const res = yield* rawRequest("GET", at)
          expect(res.status, at).toBe(200)
          expect(res.headers["content-type"], at).toBe("image/x-icon")
          expect(Buffer.compare(res.body, Buffer.from(bytes)), at).toBe(0)
        }
        // The second UI has no dark icon.
        expect((yield* rawRequest("GET", "/v2/favicon-dark.ico")).status).toBe(404)
      })
    )

    it.effect("sends a browser at / to the UI its saved choice names", () =>
      Effect.gen(function* () {
        const toV2 = yield* page("/?from=bookmark", { ...NAVIGATION, cookie: "other=1; prefect_ui_version=v2" })
        expect(toV2.status).toBe(307)
        expect(toV2.headers["location"]).toBe("/v2/?from=bookmark")
        expect((yield* page("/", { ...NAVIGATION, cookie: "prefect_ui_version=v1" })).text).toContain("Prefect UI v1")
        expect((yield* page("/", { ...NAVIGATION, cookie: "prefect_ui_version=v3" })).text).toContain("Prefect UI v1")
        // Only the entry point: deeper pages and scripts are left where they are.
        expect((yield* page("/flows", { ...NAVIGATION, cookie: "prefect_ui_version=v2" })).text).toContain("Prefect UI v1")
        expect((yield* page("/", { cookie: "prefect_ui_version=v2" })).status).toBe(200)
      })
    )
  })
})

describe("both UIs under /ui, the second one the default", () => {
  const overrides = {
    "server.ui.prefect_package_directory": both.packageDirectory,
    "server.ui.serve_base": "/ui",
    "server.ui.v2_enabled": true
  }
  layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("sends a browser at /ui to /ui/v2/ unless it chose the first, and says so in /ui-settings", () =>
      Effect.gen(function* () {
        for (const at of ["/ui", "/ui/"]) {
          const res = yield* page(at)
          expect(res.status, at).toBe(307)
          expect(res.headers["location"], at).toBe("/ui/v2/")
        }
        expect((yield* page("/ui/", { ...NAVIGATION, cookie: "prefect_ui_version=v1" })).text).toBe(
          packageIndex("v1").replaceAll(PLACEHOLDER, "/ui")
        )
        expect((yield* page("/ui/v2/")).text).toBe(packageIndex("v2").replaceAll(PLACEHOLDER, "/ui/v2"))
        yield* uiSettingsAt(["/ui-settings", "/v2/ui-settings", "/ui/ui-settings", "/ui/v2/ui-settings"], {
          default_ui: "v2",
          available_uis: ["v1", "v2"],
          v1_base_url: "/ui",
          v2_base_url: "/ui/v2"
        })
        // A browser asks for the icon at the top of the site: the default UI's.
        const icon = yield* rawRequest("GET", "/favicon.ico")
        expect(icon.status).toBe(200)
        expect(Buffer.compare(icon.body, Buffer.from(PACKAGE_ICONS.v1))).toBe(0)
        expect((yield* request("GET", "/", { fromRoot: true, headers: NAVIGATION })).body).toEqual(notFound)
      })
    )
  })
})

describe("a prefect package with only its default UI", () => {
  const overrides = { "server.ui.prefect_package_directory": onlyUi.packageDirectory, "server.ui.v2_enabled": true }
  layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("serves it at /, reports it alone and as the default whatever v2_enabled says", () =>
      Effect.gen(function* () {
        expect((yield* page("/")).text).toBe(packageIndex("v1").replaceAll(PLACEHOLDER, ""))
        yield* uiSettingsAt(["/ui-settings"], { default_ui: "v1", available_uis: ["v1"], v1_base_url: "/", v2_base_url: null })
        expect((yield* page("/favicon.ico", {})).status).toBe(200)
      })
    )
  })
})

describe("a prefect package with only its second UI", () => {
  layer(testServer({ overrides: { "server.ui.prefect_package_directory": onlyV2.packageDirectory } }), { timeout: 60_000 })((it) => {
    it.effect("serves it at / and reports it alone, as the default", () =>
      Effect.gen(function* () {
        expect((yield* page("/")).text).toBe(packageIndex("v2").replaceAll(PLACEHOLDER, ""))
        expect((yield* page("/assets/app-v2.js", {})).text).toBe(`export const base = ""`)
        yield* uiSettingsAt(["/ui-settings", "/v2/ui-settings"], {
          default_ui: "v2",
          available_uis: ["v2"],
          v1_base_url: null,
          v2_base_url: "/"
        })
        const icon = yield* rawRequest("GET", "/favicon.ico")
        expect(Buffer.compare(icon.body, Buffer.from(PACKAGE_ICONS.v2))).toBe(0)
        expect((yield* rawRequest("GET", "/favicon-dark.ico")).status).toBe(404)
      })
    )
  })
})
