import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { BlockRegistration } from "../../src/blocks/registration.ts"
import { systemBlocks } from "../../src/blocks/system-blocks.ts"
import { AreasLive, BlocksOnStartLive } from "../../src/server.ts"
import { layer as settingsLayer, type SettingsOverrides } from "../../src/settings/settings.ts"
import { ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

/** The start-time registration as a server with these settings runs it; whether it registered. */
const registerOnStart = (overrides: SettingsOverrides) =>
  Effect.flatMap(BlockRegistration, (registration) => registration.registerOnStart()).pipe(
    Effect.provide(AreasLive.pipe(Layer.provide(settingsLayer(overrides))))
  )

const secretDescription = Effect.map(request("GET", "/block_types/slug/secret"), (res) => res.body?.description)

describe("system block registration at start", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("registers nothing when server.register_blocks_on_start is false", () =>
      Effect.gen(function* () {
        expect(yield* registerOnStart({ "server.register_blocks_on_start": false })).toBe(false)
        expect((yield* request("GET", "/block_types/slug/secret")).status).toBe(404)
      })
    )

    it.effect("registers every system block type and schema once, then skips while nothing changed", () =>
      Effect.gen(function* () {
        expect(yield* registerOnStart({})).toBe(true)
        const types = ok(yield* request("POST", "/block_types/filter", { body: {} }), 200)
        expect(types.map((t) => t.slug).sort()).toEqual(systemBlocks.map((b) => b.slug).sort())
        const schemas = ok(yield* request("POST", "/block_schemas/filter", { body: {} }), 200)
        expect(schemas).toHaveLength(systemBlocks.length)
        const original = yield* secretDescription

        // A change to a system type survives a restart while the registration is remembered…
        yield* request("PATCH", `/block_types/${types.find((t) => t.slug === "secret")!.id}`, { body: { description: "edited" } })
        expect(yield* registerOnStart({})).toBe(false)
        expect(yield* secretDescription).toBe("edited")

        // …and is put back when memoizing is off; registering again adds no schema.
        expect(yield* registerOnStart({ "server.memoize_block_auto_registration": false })).toBe(true)
        expect(yield* secretDescription).toBe(original)
        expect(ok(yield* request("POST", "/block_schemas/filter", { body: {} }), 200)).toHaveLength(systemBlocks.length)
      })
    )

    it.effect("runs as part of building the server, before it serves", () =>
      Effect.gen(function* () {
        yield* request("DELETE", "/block_types/" + ok(yield* request("GET", "/block_types/slug/json"), 200).id)
        expect((yield* request("GET", "/block_types/slug/json")).status).toBe(404)
        yield* Layer.build(BlocksOnStartLive.pipe(Layer.provide(settingsLayer({ "server.memoize_block_auto_registration": false })))).pipe(
          Effect.scoped
        )
        expect((yield* request("GET", "/block_types/slug/json")).status).toBe(200)
      })
    )
  })
})
