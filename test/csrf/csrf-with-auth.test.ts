import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { CsrfToken } from "../../src/csrf/api.ts"
import { okAs } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const basic = { authorization: `Basic ${Buffer.from("ui:password").toString("base64")}` }
const overrides = {
  "server.api.auth_string": "ui:password",
  "server.api.csrf_protection_enabled": true,
  "server.api.csrf_token_expiration": "PT10M"
}

describe("CSRF protection behind an auth string", () => {
  it.layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("the UI's sequence: a token asked with the credential, then every change with both", () =>
      Effect.gen(function* () {
        // The token route is no exception to the credential.
        expect((yield* request("GET", "/csrf-token?client=ui-1")).status).toBe(401)
        const { token } = okAs(CsrfToken, yield* request("GET", "/csrf-token?client=ui-1", { headers: basic }), 200)
        const csrf = { "prefect-csrf-token": token, "prefect-csrf-client": "ui-1" }
        // The credential is checked first: a request without it learns nothing about CSRF.
        expect((yield* request("POST", "/flows/", { body: { name: "f" }, headers: csrf })).status).toBe(401)
        const noToken = yield* request("POST", "/flows/", { body: { name: "f" }, headers: basic })
        expect(noToken.status).toBe(403)
        expect(noToken.body).toEqual({ detail: "Missing CSRF token." })
        const created = yield* request("POST", "/flows/", { body: { name: "f" }, headers: { ...basic, ...csrf } })
        expect(created.status).toBe(201)
        // Reads need the credential only.
        expect((yield* request("GET", `/flows/${created.body.id}`, { headers: basic })).status).toBe(200)
        const put = yield* request("PUT", "/admin/storage", { body: { default_result_storage_block_id: null }, headers: basic })
        expect(put.status).toBe(403)
        expect((yield* request("DELETE", `/flows/${created.body.id}`, { headers: basic })).status).toBe(403)
        expect((yield* request("DELETE", `/flows/${created.body.id}`, { headers: { ...basic, ...csrf } })).status).toBe(204)
      })
    )

    it.effect("an empty token is a wrong one, and preflights are never checked", () =>
      Effect.gen(function* () {
        const empty = yield* request("POST", "/flows/filter", {
          body: {},
          headers: { ...basic, "prefect-csrf-token": "", "prefect-csrf-client": "ui-1" }
        })
        expect(empty.status).toBe(403)
        expect(empty.body).toEqual({ detail: "Invalid CSRF token or client identifier." })
        const preflight = yield* request("OPTIONS", "/flows/", {
          headers: { origin: "http://ui.example", "access-control-request-method": "POST" }
        })
        expect(preflight.status).toBe(200)
        // A refusal carries the CORS headers, so a UI on another origin can read it and fetch a token.
        const crossOrigin = yield* request("POST", "/flows/", { body: { name: "g" }, headers: { ...basic, origin: "http://ui.example" } })
        expect(crossOrigin.status).toBe(403)
        expect(crossOrigin.headers.get("access-control-allow-origin")).toBe("*")
      })
    )
  })
})
