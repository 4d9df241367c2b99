import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { request, testServer } from "../support/server.ts"

describe("base path and CORS settings", () => {
  it.layer(
    testServer({
      overrides: {
        "server.api.base_path": "/api/",
        "server.api.cors_allowed_origins": "http://a.example,http://b.example"
      }
    }),
    { timeout: 60_000 }
  )((it) => {
    it.effect("serves under the configured base path and allows only the configured origins", () =>
      Effect.gen(function* () {
        const health = yield* request("GET", "/api/health", { fromRoot: true })
        expect(health.status).toBe(200)
        expect(health.body).toBe(true)
        expect((yield* request("GET", "/v2/api/health", { fromRoot: true })).status).toBe(404)
        const allowed = yield* request("GET", "/api/health", { fromRoot: true, headers: { origin: "http://b.example" } })
        expect(allowed.headers.get("access-control-allow-origin")).toBe("http://b.example")
        const other = yield* request("GET", "/api/health", { fromRoot: true, headers: { origin: "http://c.example" } })
        expect(other.headers.get("access-control-allow-origin")).toBeNull()
      })
    )
  })
})
