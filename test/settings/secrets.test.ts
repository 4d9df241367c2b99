import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import * as Database from "../../src/database/client.ts"
import { SECRET_VALUES, SECRETS } from "../support/secrets.ts"
import { loadSettings, obfuscateUrlPassword, type SettingsOverrides, settingsReport } from "../../src/settings/settings.ts"
import { at } from "../support/tree.ts"

const load = (env: Record<string, string> = {}, overrides: SettingsOverrides = {}) =>
  loadSettings(overrides).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))



describe("secrets in the settings report", () => {
  it.effect("obfuscates every secret setting and the password of any URL a setting holds", () =>
    Effect.gen(function* () {
      const report = settingsReport(yield* load(SECRETS))
      for (const key of ["server.api.auth_string", "api.auth_string", "api.key", "server.database.connection_url", "server.database.password"]) {
        expect(at(report, key), key).toBe("********")
      }
      // The Redis URL is no secret as a whole (where the cache is matters), its password is.
      expect(at(report, "server.events.redis_url")).toBe("redis://:********@cache.internal:6379/0")
      const text = JSON.stringify(report)
      for (const secret of SECRET_VALUES) expect(text).not.toContain(secret)
    })
  )

  it("obfuscates only the password part of a URL", () => {
    expect(obfuscateUrlPassword("redis://:pw@host:6379/0")).toBe("redis://:********@host:6379/0")
    expect(obfuscateUrlPassword("postgresql://user:p%40ss:word@host/db?x=1")).toBe("postgresql://user:********@host/db?x=1")
    expect(obfuscateUrlPassword("http://user@host/path")).toBe("http://user@host/path")
    expect(obfuscateUrlPassword("redis://127.0.0.1:6379/0")).toBe("redis://127.0.0.1:6379/0")
    expect(obfuscateUrlPassword("not a url: x@y")).toBe("not a url: x@y")
  })

  it.effect("never quotes a secret's value in a settings error", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(load({}, { "server.api.auth_string": 42, "server.api.port": "abc" }))
      expect(error.message).toContain("server.api.auth_string")
      expect(error.message).not.toContain("42")
      expect(error.message).toContain('"abc"')
    })
  )

  it.effect("never quotes the database URL when it is not a valid one", () =>
    Effect.gen(function* () {
      const settings = yield* load({ BATON_SERVER_DATABASE_CONNECTION_URL: "postgresql://baton:url-secret-4@bad host:5432/db" })
      const exit = yield* Effect.exit(Effect.scoped(Layer.build(Database.layerServer(settings))))
      expect(Exit.isFailure(exit)).toBe(true)
      const text = JSON.stringify(exit) + String(Exit.isFailure(exit) ? exit.cause : "")
      expect(text).toContain("does not make a valid URL")
      expect(text).not.toContain("url-secret-4")
    })
  )
})
