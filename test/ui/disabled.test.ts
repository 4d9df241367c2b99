import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { request, testServer } from "../support/server.ts"
import { makeFixture, NAVIGATION, removeFixture } from "./fixture.ts"

const fixture = makeFixture()
afterAll(() => removeFixture(fixture))

const notFound = { detail: "Not Found" }

describe("a server with the UI disabled", () => {
  it.layer(
    testServer({ overrides: { "server.ui.enabled": false, "server.ui.static_directory": fixture.dir } }),
    { timeout: 60_000 }
  )((it) => {
    it.effect("serves none of the bundle", () =>
      Effect.gen(function* () {
        for (const at of ["/", "/index.html", "/assets/index-4f3c2a.js", "/dashboard"]) {
          const res = yield* request("GET", at, { fromRoot: true, headers: NAVIGATION })
          expect(res.status, at).toBe(404)
          expect(res.body, at).toEqual(notFound)
        }
        expect((yield* request("GET", "/health")).body).toBe(true)
        expect((yield* request("GET", "/ui-settings", { fromRoot: true })).body.available_uis).toEqual([])
      })
    )
  })
})
