import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import { CsrfToken } from "../../src/csrf/api.ts"
import { okAs } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const tokenFor = (client: string) => Effect.map(request("GET", `/csrf-token?client=${client}`), (res) => okAs(CsrfToken, res, 200))

const headers = (token: string, client: string) => ({ "prefect-csrf-token": token, "prefect-csrf-client": client })

describe("CSRF protection", () => {
  it.layer(testServer({ overrides: { "server.api.csrf_protection_enabled": true, "server.api.csrf_token_expiration": "PT10M" } }), {
    timeout: 60_000
  })((it) => {
    it.effect("issues a token per client, replacing the previous one, valid for csrf_token_expiration", () =>
      Effect.gen(function* () {
        const first = yield* tokenFor("client123")
        expect(first).toMatchObject({ client: "client123" })
        expect(first.token).toMatch(/^[0-9a-f]{64}$/)
        expect(Date.parse(first.expiration) - Date.parse(first.created!)).toBe(10 * 60 * 1000)
        const sql = yield* SqlClient.SqlClient
        const stored = yield* sql<{ token: string }>`SELECT token FROM csrf_token WHERE client = 'client123'`
        expect(stored).toEqual([{ token: first.token }])
        const second = yield* tokenFor("client123")
        expect(second.token).not.toBe(first.token)
        expect(second.id).toBe(first.id)
        const missing = yield* request("GET", "/csrf-token")
        expect(missing.status).toBe(422)
        expect(missing.body.detail[0]).toMatchObject({ loc: ["query", "client"], type: "missing" })
      })
    )

    it.effect("refuses state-changing requests without a valid token pair (403) and lets reads through", () =>
      Effect.gen(function* () {
        const body = { name: "csrf-flow" }
        expect((yield* request("GET", "/health")).status).toBe(200)
        expect((yield* request("POST", "/flows/filter", { body: {} })).body).toEqual({ detail: "Missing CSRF token." })
        const { token } = yield* tokenFor("browser")
        const noClient = yield* request("POST", "/flows/", { body, headers: { "prefect-csrf-token": token } })
        expect(noClient.status).toBe(403)
        expect(noClient.body).toEqual({ detail: "Missing client identifier." })
        expect((yield* request("POST", "/flows/", { body, headers: { "prefect-csrf-client": "browser" } })).body).toEqual({
          detail: "Missing CSRF token."
        })
        const wrong = yield* request("POST", "/flows/", { body, headers: headers("0".repeat(64), "browser") })
        expect(wrong.status).toBe(403)
        expect(wrong.body).toEqual({ detail: "Invalid CSRF token or client identifier." })
        expect(wrong.headers.get("access-control-allow-origin")).toBe("*")
        expect((yield* request("POST", "/flows/", { body, headers: headers(token, "someone-else") })).status).toBe(403)

        const created = yield* request("POST", "/flows/", { body, headers: headers(token, "browser") })
        expect(created.status).toBe(201)
        for (const method of ["PATCH", "DELETE"]) {
          const res = yield* request(method, `/flows/${created.body.id}`, { ...(method === "PATCH" ? { body: { tags: ["a"] } } : {}) })
          expect(res.status, method).toBe(403)
        }
        expect((yield* request("PATCH", `/flows/${created.body.id}`, { body: { tags: ["a"] }, headers: headers(token, "browser") })).status).toBe(204)
        expect((yield* request("GET", `/flows/${created.body.id}`)).body.tags).toEqual(["a"])
      })
    )

    it.effect("refuses an expired token, and deletes expired tokens when issuing one", () =>
      Effect.gen(function* () {
        const { token } = yield* tokenFor("stale")
        yield* tokenFor("other-stale")
        yield* TestClock.adjust("11 minutes")
        const expired = yield* request("POST", "/flows/", { body: { name: "late" }, headers: headers(token, "stale") })
        expect(expired.status).toBe(403)
        expect(expired.body).toEqual({ detail: "Invalid CSRF token or client identifier." })
        yield* tokenFor("fresh")
        const sql = yield* SqlClient.SqlClient
        const clients = yield* sql<{ client: string }>`SELECT client FROM csrf_token ORDER BY client`
        expect(clients.map((c) => c.client)).toEqual(["fresh"])
      })
    )
  })
})
