// Its own file: a second it.layer server in one test file is built with the first one's settings.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { request, testServer } from "../support/server.ts"

const BROWSER_HEADERS = "authorization,prefect-csrf-token,prefect-csrf-client"

const preflight = (path: string, origin: string, method: string, headers?: string) =>
  request("OPTIONS", path, {
    headers: {
      origin,
      "access-control-request-method": method,
      ...(headers !== undefined ? { "access-control-request-headers": headers } : {})
    }
  })

describe("CORS with listed origins, methods and headers", () => {
  it.layer(
    testServer({
      overrides: {
        "server.api.cors_allowed_origins": "http://ui.example, http://other.example",
        "server.api.cors_allowed_methods": "GET,POST",
        "server.api.cors_allowed_headers": BROWSER_HEADERS
      }
    }),
    { timeout: 60_000 }
  )((it) => {
    it.effect("allows the listed headers and the safelisted ones, naming the origin", () =>
      Effect.gen(function* () {
        const res = yield* preflight("/flows/filter", "http://ui.example", "POST", `Content-Type, Authorization, Prefect-Csrf-Token, prefect-csrf-client`)
        expect(res.status).toBe(200)
        expect(res.headers.get("access-control-allow-origin")).toBe("http://ui.example")
        expect(res.headers.get("vary")).toBe("Origin")
        expect(res.headers.get("access-control-allow-methods")).toBe("GET, POST")
        expect(res.headers.get("access-control-allow-headers")).toBe(
          "Accept, Accept-Language, Content-Language, Content-Type, authorization, prefect-csrf-client, prefect-csrf-token"
        )
      })
    )

    it.effect("refuses an unlisted origin, method or header with 400 and a JSON detail", () =>
      Effect.gen(function* () {
        const origin = yield* preflight("/flows/filter", "http://evil.example", "POST")
        expect(origin.status).toBe(400)
        expect(origin.body).toEqual({ detail: "Disallowed CORS origin" })
        expect(origin.headers.get("access-control-allow-origin")).toBeNull()
        const method = yield* preflight("/flows/filter", "http://ui.example", "DELETE")
        expect(method.status).toBe(400)
        expect(method.body).toEqual({ detail: "Disallowed CORS method" })
        const header = yield* preflight("/flows/filter", "http://other.example", "GET", "x-custom")
        expect(header.status).toBe(400)
        expect(header.body).toEqual({ detail: "Disallowed CORS headers" })
        const all = yield* preflight("/flows/filter", "http://evil.example", "PUT", "x-custom")
        expect(all.body).toEqual({ detail: "Disallowed CORS origin, method, headers" })
      })
    )

    it.effect("marks answers to listed origins only", () =>
      Effect.gen(function* () {
        const listed = yield* request("GET", "/version", { headers: { origin: "http://other.example" } })
        expect(listed.headers.get("access-control-allow-origin")).toBe("http://other.example")
        expect(listed.headers.get("vary")).toBe("Origin")
        const health = yield* request("GET", "/health", { headers: { origin: "http://other.example" } })
        expect(health.headers.get("access-control-allow-origin")).toBe("http://other.example")
        const unlisted = yield* request("GET", "/version", { headers: { origin: "http://evil.example" } })
        expect(unlisted.status).toBe(200)
        expect(unlisted.headers.get("access-control-allow-origin")).toBeNull()
      })
    )
  })
})
