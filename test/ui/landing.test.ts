/**
 * Without any UI, a browser at the server root gets Baton's own small page (name, version, the API,
 * links to its docs and health, how to add a UI); every other client keeps the JSON 404.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { layer as settingsLayer, Settings } from "../../src/settings/settings.ts"
import { escapeHtml, landingHtml, pathHref } from "../../src/ui/landing.ts"
import { BATON_VERSION } from "../../src/version.ts"
import { request, testServer } from "../support/server.ts"
import { NAVIGATION, rawRequest } from "./fixture.ts"

const notFound = { detail: "Not Found" }

describe("the landing page", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("answers a browser at / with Baton's page: version, API, docs and health links, how to add a UI", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", "/", { fromRoot: true, headers: NAVIGATION })
        expect(res.status).toBe(200)
        expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8")
        expect(res.headers.get("x-content-type-options")).toBe("nosniff")
        expect(res.headers.get("cache-control")).toBe("no-cache")
        expect(res.text).toContain(`<h1>Baton <small>${BATON_VERSION}</small></h1>`)
        expect(res.text).toContain("<code>/v2/api</code>")
        expect(res.text).toContain(`<a href="/v2/api/docs">`)
        expect(res.text).toContain(`<a href="/v2/api/health">`)
        expect(res.text).toContain("pip install prefect")
        expect(res.text).toContain("server.ui.static_directory")
        // The links lead where they say.
        expect((yield* request("GET", "/v2/api/docs", { fromRoot: true })).status).toBe(200)
        expect((yield* request("GET", "/v2/api/health", { fromRoot: true })).body).toBe(true)
      })
    )

    it.effect("runs no script and allows only its own style sheet, by hash", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", "/", { fromRoot: true, headers: { accept: "text/html" } })
        expect(res.text).not.toMatch(/<script|\son[a-z]+=|style="/i)
        const style = /<style>([^<]*)<\/style>/.exec(res.text)![1]!
        const hash = createHash("sha256").update(style).digest("base64")
        const csp = res.headers.get("content-security-policy")!.split(";").map((part) => part.trim())
        expect(csp).toContain("default-src 'none'")
        expect(csp).toContain(`style-src 'sha256-${hash}'`)
        expect(csp).toContain("frame-ancestors 'none'")
      })
    )

    it.effect("keeps the JSON 404 for clients that do not ask for HTML, and for every other path", () =>
      Effect.gen(function* () {
        for (const accept of [undefined, "application/json", "*/*"]) {
          const res = yield* request("GET", "/", { fromRoot: true, ...(accept ? { headers: { accept } } : {}) })
          expect(res.status, accept).toBe(404)
          expect(res.body, accept).toEqual(notFound)
        }
        for (const at of ["/dashboard", "/index.html", "/favicon.ico"]) {
          const res = yield* request("GET", at, { fromRoot: true, headers: NAVIGATION })
          expect(res.status, at).toBe(404)
          expect(res.body, at).toEqual(notFound)
        }
        const post = yield* request("POST", "/", { fromRoot: true, headers: NAVIGATION })
        expect(post.status).toBe(404)
        const head = yield* rawRequest("HEAD", "/", NAVIGATION)
        expect(head.status).toBe(200)
        expect(head.body.length).toBe(0)
        expect(head.headers["content-type"]).toBe("text/html; charset=utf-8")
      })
    )
  })

  it.effect("escapes what the settings put in it and keeps its links on this server", () =>
    Effect.gen(function* () {
      const settings = yield* Effect.provide(
        Settings,
        settingsLayer({ "server.api.base_path": `//evil.example/"><script>alert(1)</script>` })
      )
      const html = landingHtml(settings)
      expect(html).not.toContain("<script>")
      expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;")
      const hrefs = [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]!)
      expect(hrefs).toHaveLength(2)
      for (const href of hrefs) {
        expect(href).toMatch(/^\/evil\.example\//)
        expect(href).not.toMatch(/[<>"]/)
      }
      expect(pathHref("/\\evil.example/api")).toBe("/evil.example/api")
      expect(pathHref("/\t/evil.example")).toBe("/evil.example")
      expect(pathHref("/v2/api/docs")).toBe("/v2/api/docs")
      expect(pathHref("/my%20api/docs")).toBe("/my%20api/docs")
      expect(escapeHtml(`a&b<c>"d'`)).toBe("a&amp;b&lt;c&gt;&quot;d&#39;")
    })
  )
})
