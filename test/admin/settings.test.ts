import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { leaves } from "../../src/settings/settings.ts"
import { request, testServer } from "../support/server.ts"
import { at } from "../support/tree.ts"

describe("GET /admin/settings", () => {
  it.layer(
    testServer({
      overrides: { "api.key": "sk-very-secret", "server.services.late_runs.after_seconds": "PT30S" }
    }),
    { timeout: 60_000 }
  )((it) => {
    it.effect("returns the whole settings tree with the spec's defaults", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", "/admin/settings")
        expect(res.status).toBe(200)
        for (const leaf of leaves) {
          expect(at(res.body, leaf.key), leaf.key).not.toBeUndefined()
        }
        expect(at(res.body, "server.api.port")).toBe(0) // the test server's ephemeral port
        expect(at(res.body, "server.api.base_path")).toBe("/v2/api")
        expect(at(res.body, "server.api.default_limit")).toBe(200)
        expect(at(res.body, "server.api.csrf_token_expiration")).toBe("PT1H")
        expect(at(res.body, "server.services.scheduler.loop_seconds")).toBe(60)
        expect(at(res.body, "server.services.scheduler.max_scheduled_time")).toBe("P100D")
        expect(at(res.body, "server.services.late_runs.after_seconds")).toBe("PT30S")
        expect(at(res.body, "server.events.retention_period")).toBe("P7D")
        expect(at(res.body, "server.deployment_schedule_max_scheduled_runs")).toBe(50)
        expect(at(res.body, "logging.to_api.batch_size")).toBe(4000000)
        // A path under home, as the reference's $PREFECT_HOME/logging.yml.
        expect(at(res.body, "logging.config_path")).toBe(`${at(res.body, "home")}/logging.yml`)
      })
    )

    it.effect("obfuscates set secrets and shows unset ones as null", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", "/admin/settings")
        expect(at(res.body, "api.key")).toBe("********")
        expect(res.text).not.toContain("sk-very-secret")
        expect(at(res.body, "server.api.auth_string")).toBeNull()
        expect(at(res.body, "server.database.password")).toBeNull()
      })
    )
  })
})
