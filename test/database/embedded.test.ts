/**
 * The embedded database's PostgreSQL settings: its page cache and the connections its shared memory
 * is sized for are what src/database/embedded.ts says (shared memory is allocated in WebAssembly
 * memory and resident from the start), unless a page cache is given.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_CONNECTIONS, openPGlite, SHARED_BUFFERS } from "../../src/database/embedded.ts"

const show = (options: Parameters<typeof openPGlite>[0], setting: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const db = yield* openPGlite(options)
      const result = yield* Effect.promise(() => db.query<Record<string, string>>(`SHOW ${setting}`))
      return result.rows[0]![setting]!
    })
  )

const sharedBuffers = (options: Parameters<typeof openPGlite>[0]) => show(options, "shared_buffers")

describe("the embedded database's page cache", () => {
  it.effect("is SHARED_BUFFERS (8MB), or the size given", () =>
    Effect.gen(function* () {
      expect(SHARED_BUFFERS).toBe("8MB")
      expect(yield* sharedBuffers({})).toBe("8MB")
      expect(yield* sharedBuffers({ sharedBuffers: "16MB" })).toBe("16MB")
    }), { timeout: 60_000 })
})

describe("the embedded database's shared memory", () => {
  it.effect("is sized for MAX_CONNECTIONS (10) connections: 12MB with the 8MB page cache", () =>
    Effect.gen(function* () {
      expect(MAX_CONNECTIONS).toBe(10)
      expect(yield* show({}, "max_connections")).toBe("10")
      expect(yield* show({}, "shared_memory_size")).toBe("12MB")
    }), { timeout: 60_000 })
})
