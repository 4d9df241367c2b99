import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { API_VERSION, COMPATIBLE_SERVER_VERSION } from "../../src/version.ts"
import { client, request, testServer } from "../support/server.ts"

describe("root routes", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("GET /health, /version, /hello and /admin/version answer as the reference", () =>
      Effect.gen(function* () {
        const health = yield* request("GET", "/health")
        expect(health.status).toBe(200)
        expect(health.body).toBe(true)
        expect((yield* request("GET", "/version")).body).toBe(API_VERSION)
        expect((yield* request("GET", "/hello")).body).toBe("👋")
        const version = yield* request("GET", "/admin/version")
        expect(version.body).toBe(COMPATIBLE_SERVER_VERSION)
        expect(Number(version.body.split(".")[0])).toBe(3)
      })
    )

    it.effect("GET /ready answers OK while the database answers", () =>
      Effect.gen(function* () {
        const ready = yield* request("GET", "/ready")
        expect(ready.status).toBe(200)
        expect(ready.body).toEqual({ message: "OK" })
      })
    )

    it.effect("POST /health is 405, not 500", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/health")
        expect(res.status).toBe(405)
        expect(res.body).toEqual({ detail: "Method Not Allowed" })
      })
    )

    it.effect("the typed client derived from the Api reads the same answers", () =>
      Effect.gen(function* () {
        const api = yield* client
        expect(yield* api.root.health()).toBe(true)
        expect(yield* api.root.hello()).toBe("👋")
        expect(yield* api.root.ready()).toEqual({ message: "OK" })
      })
    )
  })
})
