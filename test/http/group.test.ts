import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpServer } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import { apiGroup, readsSettingsOnly } from "../../src/http/group.ts"
import * as SettingsModule from "../../src/settings/settings.ts"
import { Settings } from "../../src/settings/settings.ts"

class Greeter extends Context.Tag("test/Greeter")<Greeter, { readonly greet: (name: string) => string }>() {}

const Api = HttpApi.make("test").add(
  HttpApiGroup.make("greetings").add(
    HttpApiEndpoint.get("greet", "/greet/:name")
      .setPath(Schema.Struct({ name: Schema.String }))
      .addSuccess(Schema.Struct({ greeting: Schema.String, basePath: Schema.String, services: Schema.Array(Schema.String) }))
  )
)

/** The same endpoints in a group of their own, made only with the platform's group. */
const OtherApi = HttpApi.make("other").add(
  HttpApiGroup.make("greetings").add(
    HttpApiEndpoint.get("greet", "/greet/:name")
      .setPath(Schema.Struct({ name: Schema.String }))
      .addSuccess(Schema.Struct({ greeting: Schema.String, basePath: Schema.String, services: Schema.Array(Schema.String) }))
  )
)

const GreetingsLive = apiGroup(Api, "greetings", (handlers) =>
  Effect.gen(function* () {
    const greeter = yield* Greeter
    return handlers.handle("greet", ({ path }) =>
      Effect.gen(function* () {
        const settings = yield* Settings
        // What the handler runs with: the request's context and the settings.
        const services = [...(yield* Effect.context<never>()).unsafeMap.keys()].sort()
        return { greeting: greeter.greet(path.name), basePath: settings.server.api.base_path, services }
      }))
  }))

const serve = (apiLive: Layer.Layer<HttpApi.Api, never, Greeter | Settings>) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      HttpApiBuilder.toWebHandler(
        Layer.mergeAll(
          apiLive,
          HttpServer.layerContext
        ).pipe(
          Layer.provide(Layer.succeed(Greeter, { greet: (name) => `hello, ${name}` })),
          Layer.provide(SettingsModule.layer({ "server.api.base_path": "/base" }))
        )
      )),
    ({ dispose }) => Effect.promise(dispose)
  )

describe("an area's group of the Api (apiGroup)", () => {
  it.scoped("hands its build the services it is built with, and its handlers the request's context and the settings", () =>
    Effect.gen(function* () {
      const { handler } = yield* serve(HttpApiBuilder.api(Api).pipe(Layer.provide(GreetingsLive)))
      const response = yield* Effect.promise(() => handler(new Request("http://localhost/greet/ada")))
      expect(response.status).toBe(200)
      const body = (yield* Effect.promise(() => response.json())) as { greeting: string; basePath: string; services: Array<string> }
      expect(body.greeting).toBe("hello, ada")
      expect(body.basePath).toBe("/base")
      expect(body.services).toContain(Settings.key)
      expect(body.services).toContain("@effect/platform/HttpServerRequest")
      expect(body.services).not.toContain(Greeter.key)
      // Baton's request path makes no request scope for its endpoints (src/http/api-path.ts).
      expect(readsSettingsOnly(Api.groups.greetings)).toBe(true)
    }))

  it.scoped("the platform's group, for comparison, runs its handlers with every service it was built with", () =>
    Effect.gen(function* () {
      // A group of the same name in another Api, made only by the platform.
      const PlatformLive = HttpApiBuilder.group(OtherApi, "greetings", (handlers) =>
        Effect.gen(function* () {
          const greeter = yield* Greeter
          return handlers.handle("greet", ({ path }) =>
            Effect.map(Effect.context<never>(), (context) => ({
              greeting: greeter.greet(path.name),
              basePath: "",
              services: [...context.unsafeMap.keys()].sort()
            })))
        }))
      const { handler } = yield* serve(HttpApiBuilder.api(OtherApi).pipe(Layer.provide(PlatformLive)))
      const response = yield* Effect.promise(() => handler(new Request("http://localhost/greet/ada")))
      const body = (yield* Effect.promise(() => response.json())) as { services: Array<string> }
      expect(body.services).toContain(Greeter.key)
      expect(readsSettingsOnly(OtherApi.groups.greetings)).toBe(false)
    }))
})
