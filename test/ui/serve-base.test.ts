import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { request, testServer } from "../support/server.ts"
import { APP_JS, INDEX_HTML, makeFixture, NAVIGATION, PLACEHOLDER, rawRequest, removeFixture } from "./fixture.ts"

const fixture = makeFixture()
afterAll(() => removeFixture(fixture))

const notFound = { detail: "Not Found" }

describe("the UI served under /ui, with CSRF, credentials and an API URL set", () => {
  it.layer(
    testServer({
      overrides: {
        "server.ui.static_directory": fixture.dir,
        "server.ui.serve_base": "ui/",
        "server.ui.v2_enabled": true,
        "server.ui.api_url": "https://baton.example/v2/api",
        "server.api.csrf_protection_enabled": true,
        "server.api.auth_string": "admin:secret"
      }
    }),
    { timeout: 60_000 }
  )((it) => {
    it.effect("serves the bundle below the serve base, the placeholder replaced by it", () =>
      Effect.gen(function* () {
        for (const at of ["/ui", "/ui/", "/ui/index.html"]) {
          const res = yield* rawRequest("GET", at, NAVIGATION)
          expect(res.status, at).toBe(200)
          expect(res.body.toString(), at).toBe(INDEX_HTML.replaceAll(PLACEHOLDER, "/ui"))
        }
        const js = yield* rawRequest("GET", "/ui/assets/index-4f3c2a.js")
        expect(js.status).toBe(200)
        expect(js.headers["cache-control"]).toBe("public, max-age=31536000, immutable")
        expect(js.body.toString()).toBe(APP_JS.replaceAll(PLACEHOLDER, "/ui"))
        expect(js.body.toString()).toContain(`"/ui"`)
        const page = yield* rawRequest("GET", "/ui/flows/flow/abc", NAVIGATION)
        expect(page.status).toBe(200)
        expect(page.body.toString()).toContain("Fixture UI")
      })
    )

    it.effect("answers nothing of the UI outside the serve base", () =>
      Effect.gen(function* () {
        for (const at of ["/", "/index.html", "/assets/index-4f3c2a.js", "/dashboard", "/uiother", "/uix/index.html"]) {
          const res = yield* request("GET", at, { fromRoot: true, headers: NAVIGATION })
          expect(res.status, at).toBe(404)
          expect(res.body, at).toEqual(notFound)
        }
        expect((yield* request("GET", "/health")).body).toBe(true)
      })
    )

    it.effect("answers /ui-settings at the root, the API base's parent and below the serve base", () =>
      Effect.gen(function* () {
        const expected = {
          api_url: "https://baton.example/v2/api",
          csrf_enabled: true,
          auth: "BASIC",
          flags: [],
          default_ui: "v2",
          available_uis: ["v2"],
          v1_base_url: null,
          v2_base_url: "/ui"
        }
        for (const at of ["/ui-settings", "/v2/ui-settings", "/ui/ui-settings"]) {
          const res = yield* request("GET", at, { fromRoot: true })
          expect(res.status, at).toBe(200)
          expect(res.body, at).toEqual(expected)
        }
      })
    )

    it.effect("lets a browser's preflight carry credentials and CSRF headers", () =>
      Effect.gen(function* () {
        const preflight = yield* request("OPTIONS", "/flows/", {
          headers: {
            origin: "http://localhost:5173",
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization,content-type,prefect-csrf-token,prefect-csrf-client"
          }
        })
        expect(preflight.status).toBe(200)
        expect(preflight.headers.get("access-control-allow-origin")).toBe("*")
        expect(preflight.headers.get("access-control-allow-headers")).toBe(
          "authorization,content-type,prefect-csrf-token,prefect-csrf-client"
        )
        expect(preflight.headers.get("access-control-allow-methods")).toContain("POST")
        // The preflight is answered before the credential and CSRF checks, which still guard the
        // request itself: without the credential 401, with it but without a CSRF token 403.
        const anonymous = yield* request("POST", "/flows/", { body: { name: "f" }, headers: { origin: "http://localhost:5173" } })
        expect(anonymous.status).toBe(401)
        expect(anonymous.headers.get("access-control-allow-origin")).toBe("*")
        const authorization = `Basic ${Buffer.from("admin:secret").toString("base64")}`
        const post = yield* request("POST", "/flows/", { body: { name: "f" }, headers: { origin: "http://localhost:5173", authorization } })
        expect(post.status).toBe(403)
        expect(post.headers.get("access-control-allow-origin")).toBe("*")
      })
    )
  })
})
