import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, HashMap, Layer, List, Logger, LogLevel } from "effect"
import { request, testServer } from "../support/server.ts"
import { rawRequest } from "../support/raw-http.ts"
import { connect } from "../support/websocket.ts"

const AUTH = "admin:s3cret-pass-phrase"
const basic = (credential: string) => ({ authorization: `Basic ${Buffer.from(credential).toString("base64")}` })
const authorized = basic(AUTH)
const ID = "5b1e4c9e-7f0a-4b8e-9c1d-2f3a4b5c6d7e"

/** Everything the server logged, as text: messages, annotations and causes. */
const logged: Array<string> = []
const capture = Logger.make(({ annotations, cause, message }) => {
  const text = List.isList(message) ? List.toArray(message) : Array.isArray(message) ? message : [message]
  logged.push(JSON.stringify({ text, annotations: Object.fromEntries(HashMap.toEntries(annotations)) }) + Cause.pretty(cause))
})

// Requests are logged at DEBUG here, which also turns the /health fast path off: every request
// below goes through the Effect router.
const server = testServer({ overrides: { "server.api.auth_string": AUTH } }).pipe(
  Layer.provide(Logger.replace(Logger.defaultLogger, capture)),
  Layer.provide(Logger.minimumLogLevel(LogLevel.Debug))
)

const expectUnauthorized = (res: { readonly status: number; readonly body: unknown; readonly text: string }) => {
  expect(res.status).toBe(401)
  expect(res.body).toEqual({ detail: "Unauthorized" })
}

describe("HTTP Basic authentication with server.api.auth_string", () => {
  it.layer(server, { timeout: 60_000 })((it) => {
    it.effect("answers 401 with a detail and a Basic challenge without the credential, and serves with it", () =>
      Effect.gen(function* () {
        const none = yield* rawRequest("POST", "/v2/api/flows/filter", { headers: { "content-type": "application/json" }, chunks: ["{}"] })
        expectUnauthorized(none)
        expect(none.headers["www-authenticate"]).toBe('Basic realm="baton", charset="UTF-8"')
        for (const headers of [
          basic("admin:wrong"),
          basic("admin:s3cret-pass-phras"),
          basic(AUTH + "x"),
          basic(""),
          { authorization: "Basic" },
          { authorization: "Basic !!!not-base64!!!" },
          { authorization: `Bearer ${AUTH}` },
          { authorization: `Bearer ${Buffer.from(AUTH).toString("base64")}` },
          { authorization: `Basic ${Buffer.from(AUTH).toString("base64")} extra` }
        ]) {
          expectUnauthorized(yield* request("POST", "/flows/filter", { body: {}, headers }))
        }
        expect((yield* request("POST", "/flows/filter", { body: {}, headers: authorized })).status).toBe(200)
        // The scheme is case-insensitive (RFC 7617).
        const lower = { authorization: `basic ${Buffer.from(AUTH).toString("base64")}` }
        expect((yield* request("POST", "/flows/filter", { body: {}, headers: lower })).status).toBe(200)
        const created = yield* request("POST", "/flows/", { body: { name: "behind-auth" }, headers: authorized })
        expect(created.status).toBe(201)
        expect((yield* request("GET", `/flows/${created.body.id}`, { headers: authorized })).body.name).toBe("behind-auth")
        expectUnauthorized(yield* request("GET", `/flows/${created.body.id}`))
        expectUnauthorized(yield* request("DELETE", `/flows/${created.body.id}`))
      })
    )

    it.effect("leaves the challenge out for a page's scripts, which show their own login", () =>
      Effect.gen(function* () {
        // fetch says Sec-Fetch-Mode: cors, as a browser does for a page's script.
        const script = yield* request("GET", "/admin/version")
        expectUnauthorized(script)
        expect(script.headers.get("www-authenticate")).toBeNull()
        for (const headers of [{}, { "sec-fetch-mode": "navigate" }]) {
          const page = yield* rawRequest("GET", "/v2/api/admin/version", { headers })
          expect(page.status).toBe(401)
          expect(page.headers["www-authenticate"]).toContain("Basic")
        }
      })
    )

    it.effect("leaves GET /health, GET /ready and CORS preflights open, and nothing else", () =>
      Effect.gen(function* () {
        expect(yield* request("GET", "/health")).toMatchObject({ status: 200, body: true })
        expect((yield* request("GET", "/health/")).status).toBe(200)
        expect((yield* request("GET", "/health?probe=1")).status).toBe(200)
        expect((yield* request("GET", "/ready")).status).toBe(200)
        expectUnauthorized(yield* request("POST", "/health"))
        expectUnauthorized(yield* request("GET", "/version"))
        expectUnauthorized(yield* request("GET", "/hello"))
        // Paths that merely end like an open one are not open.
        expectUnauthorized(yield* request("GET", "/variables/name/health"))
        // A preflight is answered in front of the check; the 401 itself carries the CORS headers,
        // so a UI on another origin can read it.
        const preflight = yield* request("OPTIONS", "/flows/filter", {
          headers: { origin: "http://ui.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization" }
        })
        expect(preflight.status).toBe(200)
        expect(preflight.headers.get("access-control-allow-origin")).toBe("*")
        const crossOrigin = yield* request("POST", "/flows/filter", { body: {}, headers: { origin: "http://ui.example" } })
        expect(crossOrigin.status).toBe(401)
        expect(crossOrigin.headers.get("access-control-allow-origin")).toBe("*")
        // Outside the base path the Api answers nothing either way.
        expect((yield* request("GET", "/elsewhere", { fromRoot: true })).status).toBe(404)
      })
    )

    it.effect("guards the OpenAPI document, the docs page, the CSRF token route and plain requests to websocket routes", () =>
      Effect.gen(function* () {
        for (const path of ["/openapi.json", "/docs", "/csrf-token?client=abc", "/logs/out", "/events/out", "/events/in"]) {
          expectUnauthorized(yield* request("GET", path))
        }
        expect((yield* request("GET", "/openapi.json", { headers: authorized })).status).toBe(200)
        // An upgrade header opens nothing but the websocket routes' own handshake.
        const upgraded = yield* rawRequest("GET", `/v2/api/flows/${ID}`, {
          headers: { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==" }
        }).pipe(Effect.orElseSucceed(() => undefined))
        expect(upgraded?.status).toBe(401)
        expect(yield* connect(`/flows/${ID}`)).toEqual({ refused: 401 })
        expect(yield* connect("/admin/settings")).toEqual({ refused: 401 })
      })
    )

    it.effect("never shows the credential in a log line, an error body or the settings report", () =>
      Effect.gen(function* () {
        const report = yield* request("GET", "/admin/settings", { headers: authorized })
        expect(report.status).toBe(200)
        expect(report.body.server.api.auth_string).toBe("********")
        const wrong = yield* request("GET", "/admin/settings", { headers: basic("admin:s3cret-pass-phrasE") })
        const malformed = yield* request("POST", "/flows/", { body: "{not json", headers: authorized })
        expect(malformed.status).toBe(422)
        const bodies = [report.text, wrong.text, malformed.text].join("\n")
        const encoded = Buffer.from(AUTH).toString("base64")
        expect(logged.some((line) => line.includes("/admin/settings"))).toBe(true)
        for (const text of [bodies, logged.join("\n")]) {
          expect(text).not.toContain("s3cret-pass")
          expect(text).not.toContain(encoded)
        }
      })
    )
  })
})
