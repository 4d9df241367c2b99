import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { withoutCredentials } from "../../src/ui/ui-settings.ts"
import { request, testServer } from "../support/server.ts"

describe("/ui-settings with credentials in the API URL", () => {
  it("drops the user and password of a URL's authority, and nothing else", () => {
    expect(withoutCredentials("https://admin:s3cret@baton.example.com:4200/v2/api")).toBe("https://baton.example.com:4200/v2/api")
    expect(withoutCredentials("https://token@baton.example.com/v2/api")).toBe("https://baton.example.com/v2/api")
    // The authority runs to its last @, as URL parsers read it.
    expect(withoutCredentials("http://user:p@ss@host/api")).toBe("http://host/api")
    expect(withoutCredentials("http://host/api/@scope?x=a@b#c@d")).toBe("http://host/api/@scope?x=a@b#c@d")
    expect(withoutCredentials("/v2/api")).toBe("/v2/api")
    expect(withoutCredentials("HTTP://u:p@Host")).toBe("HTTP://Host")
  })

  const overrides = { "server.ui.api_url": "https://admin:s3cret-pw@baton.example.com/v2/api" }
  it.layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("answers the URL without them, at every /ui-settings path, and serves on", () =>
      Effect.gen(function* () {
        for (const path of ["/ui-settings", "/v2/ui-settings"]) {
          const answer = yield* request("GET", path, { fromRoot: true })
          expect(answer.status).toBe(200)
          expect(answer.body.api_url).toBe("https://baton.example.com/v2/api")
          expect(answer.text).not.toContain("s3cret-pw")
          expect(answer.text).not.toContain("admin")
        }
        expect((yield* request("GET", "/health")).status).toBe(200)
      })
    )
  })
})
