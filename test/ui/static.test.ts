import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { gunzipSync } from "node:zlib"
import { UiStatic } from "../../src/ui/bundle.ts"
import { request, testServer } from "../support/server.ts"
import { APP_JS, BIG_SIZE, FILES, INDEX_HTML, makeFixture, NAVIGATION, PLACEHOLDER, rawRequest, removeFixture } from "./fixture.ts"

const fixture = makeFixture()
afterAll(() => removeFixture(fixture))

const IMMUTABLE = "public, max-age=31536000, immutable"
const notFound = { detail: "Not Found" }

describe("the UI served at /", () => {
  it.layer(testServer({ overrides: { "server.ui.static_directory": fixture.dir } }), { timeout: 60_000 })((it) => {
    it.effect("serves index.html at / with the placeholder replaced by the empty serve base, never cached unchecked", () =>
      Effect.gen(function* () {
        const res = yield* rawRequest("GET", "/", NAVIGATION)
        expect(res.status).toBe(200)
        expect(res.headers["content-type"]).toBe("text/html; charset=utf-8")
        expect(res.headers["cache-control"]).toBe("no-cache")
        expect(res.headers["etag"]).toMatch(/^W\/".+"$/)
        expect(res.body.toString()).toBe(INDEX_HTML.replaceAll(PLACEHOLDER, ""))
        expect(res.body.toString()).toContain(`src="/assets/index-4f3c2a.js"`)
        expect((yield* rawRequest("GET", "/index.html")).body.toString()).toBe(res.body.toString())
      })
    )

    it.effect("serves hashed assets as immutable, with the placeholder replaced in every text file", () =>
      Effect.gen(function* () {
        const js = yield* rawRequest("GET", "/assets/index-4f3c2a.js")
        expect(js.status).toBe(200)
        expect(js.headers["content-type"]).toBe("text/javascript; charset=utf-8")
        expect(js.headers["cache-control"]).toBe(IMMUTABLE)
        expect(js.headers["content-length"]).toBe(String(js.body.length))
        expect(js.body.toString()).toBe(APP_JS.replaceAll(PLACEHOLDER, ""))
        for (const name of ["assets/index-4f3c2a.js.map", "assets/worker-1b2c3d.mjs", "assets/index-9a8b7c.css", "site.webmanifest", "config.json"]) {
          const text = (yield* rawRequest("GET", `/${name}`)).body.toString()
          expect(text, name).toBe(String(FILES[name]).replaceAll(PLACEHOLDER, ""))
          expect(text, name).not.toContain("PREFECT_UI_SERVE_BASE")
        }
      })
    )

    it.effect("answers each kind of file with its content type and the exact bytes", () =>
      Effect.gen(function* () {
        const expected: Record<string, string> = {
          "assets/index-4f3c2a.js.map": "application/json",
          "assets/worker-1b2c3d.mjs": "text/javascript; charset=utf-8",
          "assets/index-9a8b7c.css": "text/css; charset=utf-8",
          "assets/logo-77aa.svg": "image/svg+xml",
          "assets/inter-55ee.woff2": "font/woff2",
          "favicon.ico": "image/x-icon",
          "logo.png": "image/png",
          "robots.txt": "text/plain; charset=utf-8",
          "site.webmanifest": "application/manifest+json",
          "config.json": "application/json",
          "assets/big-0c0c.bin": "application/octet-stream"
        }
        for (const [name, type] of Object.entries(expected)) {
          const res = yield* rawRequest("GET", `/${name}`)
          expect(res.status, name).toBe(200)
          expect(res.headers["content-type"], name).toBe(type)
          expect(res.headers["x-content-type-options"], name).toBe("nosniff")
          expect(res.headers["cache-control"], name).toBe(name.startsWith("assets/") ? IMMUTABLE : "no-cache")
          const content = FILES[name]!
          if (content instanceof Uint8Array) expect(Buffer.compare(res.body, Buffer.from(content)), name).toBe(0)
        }
        const big = yield* rawRequest("GET", "/assets/big-0c0c.bin")
        expect(big.headers["content-length"]).toBe(String(BIG_SIZE))
        expect(big.body.length).toBe(BIG_SIZE)
      })
    )

    it.effect("answers HEAD with the headers of GET and no body, for kept and streamed files", () =>
      Effect.gen(function* () {
        for (const name of ["/assets/index-4f3c2a.js", "/assets/big-0c0c.bin", "/"]) {
          const get = yield* rawRequest("GET", name)
          const head = yield* rawRequest("HEAD", name)
          expect(head.status, name).toBe(200)
          expect(head.body.length, name).toBe(0)
          for (const header of ["content-type", "content-length", "cache-control", "etag"]) {
            expect(head.headers[header], `${name} ${header}`).toBe(get.headers[header])
          }
        }
      })
    )

    it.effect("answers a matching If-None-Match with 304, no body and the same ETag", () =>
      Effect.gen(function* () {
        const first = yield* rawRequest("GET", "/assets/index-4f3c2a.js")
        const again = yield* rawRequest("GET", "/assets/index-4f3c2a.js", { "if-none-match": first.headers["etag"]! })
        expect(again.status).toBe(304)
        expect(again.body.length).toBe(0)
        expect(again.headers["etag"]).toBe(first.headers["etag"])
      })
    )

    it.effect("gzips text when the browser takes it, saying it varies by Accept-Encoding", () =>
      Effect.gen(function* () {
        const plain = yield* rawRequest("GET", "/assets/index-4f3c2a.js")
        const gzipped = yield* rawRequest("GET", "/assets/index-4f3c2a.js", { "accept-encoding": "gzip, deflate, br" })
        expect(gzipped.headers["content-encoding"]).toBe("gzip")
        expect(gzipped.headers["vary"]).toBe("Accept-Encoding")
        expect(Number(gzipped.headers["content-length"])).toBeLessThan(plain.body.length)
        expect(gunzipSync(gzipped.body).toString()).toBe(plain.body.toString())
      })
    )

    it.effect("does not gzip for a browser that refuses gzip, nor an image", () =>
      Effect.gen(function* () {
        const refused = yield* rawRequest("GET", "/assets/index-4f3c2a.js", { "accept-encoding": "gzip;q=0" })
        expect(refused.headers["content-encoding"]).toBeUndefined()
        const image = yield* rawRequest("GET", "/logo.png", { "accept-encoding": "gzip" })
        expect(image.headers["content-encoding"]).toBeUndefined()
      })
    )

    it.effect("answers a page navigation that names no file with index.html, anything else with a JSON 404", () =>
      Effect.gen(function* () {
        for (const page of ["/dashboard", "/flows/flow/0b7c2a4e-0000-4000-8000-000000000000", "/runs?tab=Flow+Runs"]) {
          const res = yield* rawRequest("GET", page, NAVIGATION)
          expect(res.status, page).toBe(200)
          expect(res.headers["content-type"], page).toBe("text/html; charset=utf-8")
          expect(res.headers["cache-control"], page).toBe("no-cache")
          expect(res.body.toString(), page).toContain("Fixture UI")
        }
        expect((yield* rawRequest("GET", "/dashboard", { "sec-fetch-mode": "navigate" })).status).toBe(200)
        expect((yield* rawRequest("HEAD", "/dashboard", NAVIGATION)).status).toBe(200)
        // A nested folder's own index.html.
        expect((yield* rawRequest("GET", "/help/", NAVIGATION)).body.toString()).toContain("help page")
        expect((yield* rawRequest("GET", "/help")).body.toString()).toContain("help page")

        // Not a navigation: a script's fetch, a missing asset, another method.
        for (const [method, page, headers] of [
          ["GET", "/dashboard", { accept: "application/json" }],
          ["GET", "/dashboard", {}],
          ["GET", "/assets/missing-123.js", { accept: "*/*" }],
          ["POST", "/dashboard", NAVIGATION]
        ] as const) {
          const res = yield* request(method, page, { fromRoot: true, headers })
          expect(res.status, `${method} ${page}`).toBe(404)
          expect(res.body, `${method} ${page}`).toEqual(notFound)
        }
        const post = yield* request("POST", "/assets/index-4f3c2a.js", { fromRoot: true })
        expect(post.status).toBe(405)
        expect(post.body).toEqual({ detail: "Method Not Allowed" })
      })
    )

    it.effect("leaves API paths and the server's own names to the API, even for a browser", () =>
      Effect.gen(function* () {
        const health = yield* request("GET", "/health", { headers: NAVIGATION })
        expect(health.body).toBe(true)
        const unknown = yield* request("GET", "/no/such/route", { headers: NAVIGATION })
        expect(unknown.status).toBe(404)
        expect(unknown.body).toEqual(notFound)
        expect((yield* request("GET", "/", { headers: NAVIGATION })).body).toEqual(notFound)
        expect((yield* request("POST", "/health")).status).toBe(405)
        const docs = yield* request("GET", "/docs", { headers: NAVIGATION })
        expect(docs.status).toBe(200)
        expect(docs.text).not.toContain("Fixture UI")
        expect((yield* request("GET", "/openapi.json")).body.paths).toBeDefined()
        for (const name of ["/docs", "/openapi.json", "/health", "/ready", "/version", "/api/flows", "/ui-settings/x"]) {
          const res = yield* request("GET", name, { fromRoot: true, headers: NAVIGATION })
          expect(res.status, name).toBe(404)
          expect(res.body, name).toEqual(notFound)
        }
      })
    )

    it.effect("refuses every attempt to leave the bundle", () =>
      Effect.gen(function* () {
        const attempts = [
          "/../secret.txt",
          "/../../../../etc/passwd",
          "/assets/../../secret.txt",
          "/%2e%2e/secret.txt",
          "/assets/%2e%2e/%2e%2e/secret.txt",
          "/..%2fsecret.txt",
          "/assets/..%2f..%2fsecret.txt",
          "/..%5csecret.txt",
          "/assets/%2E%2E%5C%2E%2E%5Csecret.txt",
          "/assets/%00.js",
          "/assets/%E0%A4%A.js",
          "/./index.html",
          `/${encodeURIComponent(fixture.root)}/secret.txt`,
          `//${fixture.root.slice(1)}/secret.txt`
        ]
        for (const attempt of attempts) {
          for (const headers of [{}, NAVIGATION]) {
            const res = yield* rawRequest("GET", attempt, headers)
            const text = res.body.toString()
            expect(text, attempt).not.toContain("not for browsers")
            expect(text, attempt).not.toContain("root:")
            if (res.status !== 404) {
              // Only the UI's own index.html may answer (a navigation to a path that names no file).
              expect(res.status, attempt).toBe(200)
              expect(text, attempt).toContain("Fixture UI")
            } else {
              expect(JSON.parse(text), attempt).toEqual(notFound)
            }
          }
        }
        // The plainest attempts are refused outright, navigation or not.
        for (const attempt of ["/../secret.txt", "/assets/../../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt"]) {
          expect((yield* rawRequest("GET", attempt, NAVIGATION)).status, attempt).toBe(404)
        }
      })
    )

    it.effect("serves from a private copy and leaves the original folder as it was", () =>
      Effect.gen(function* () {
        const { bundles } = yield* UiStatic
        expect(bundles).toHaveLength(1)
        const ui = bundles[0]!
        expect(ui.source).toBe(fixture.dir)
        expect(ui.directory).not.toBe(fixture.dir)
        expect(ui.directory.startsWith(os.tmpdir())).toBe(true)
        expect(fs.readFileSync(path.join(ui.directory, "index.html"), "utf8")).toBe(INDEX_HTML.replaceAll(PLACEHOLDER, ""))
        for (const [name, content] of Object.entries(FILES)) {
          const original = fs.readFileSync(path.join(fixture.dir, ...name.split("/")))
          expect(Buffer.compare(original, Buffer.from(content)), name).toBe(0)
        }
        expect([...ui.files.keys()].sort()).toEqual(Object.keys(FILES).sort())
      })
    )

    it.effect("answers /ui-settings at the root and at the API base's parent", () =>
      Effect.gen(function* () {
        const expected = {
          api_url: "/v2/api",
          csrf_enabled: false,
          auth: null,
          flags: [],
          default_ui: "v1",
          available_uis: ["v1"],
          v1_base_url: "/",
          v2_base_url: null
        }
        for (const at of ["/ui-settings", "/ui-settings/", "/v2/ui-settings"]) {
          const res = yield* request("GET", at, { fromRoot: true, headers: NAVIGATION })
          expect(res.status, at).toBe(200)
          expect(res.headers.get("content-type"), at).toBe("application/json")
          expect(res.body, at).toEqual(expected)
        }
        const post = yield* request("POST", "/ui-settings", { fromRoot: true })
        expect(post.status).toBe(405)
        expect(post.body).toEqual({ detail: "Method Not Allowed" })
        // Inside the API's base path it is no route.
        expect((yield* request("GET", "/ui-settings")).status).toBe(404)
      })
    )

    it.effect("answers CORS preflights for UI paths and /ui-settings as for the API", () =>
      Effect.gen(function* () {
        for (const at of ["/ui-settings", "/assets/index-4f3c2a.js"]) {
          const preflight = yield* request("OPTIONS", at, {
            fromRoot: true,
            headers: { origin: "http://ui.example", "access-control-request-method": "GET" }
          })
          expect(preflight.status, at).toBe(200)
          expect(preflight.headers.get("access-control-allow-origin"), at).toBe("*")
          const get = yield* request("GET", at, { fromRoot: true, headers: { origin: "http://ui.example" } })
          expect(get.headers.get("access-control-allow-origin"), at).toBe("*")
        }
      })
    )
  })
})
