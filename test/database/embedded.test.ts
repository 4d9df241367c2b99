/**
 * The embedded database's PostgreSQL settings: its page cache is what src/database/embedded.ts
 * says (it is allocated in WebAssembly memory and resident from the start), unless one is given.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { openPGlite, SHARED_BUFFERS } from "../../src/database/embedded.ts"

const sharedBuffers = (options: Parameters<typeof openPGlite>[0]) =>
  Effect.scoped(
    Effect.gen(function* () {
      const db = yield* openPGlite(options)
      const result = yield* Effect.promise(() => db.query<{ shared_buffers: string }>("SHOW shared_buffers"))
      return result.rows[0]!.shared_buffers
    })
  )

describe("the embedded database's page cache", () => {
  it.effect("is SHARED_BUFFERS (8MB), or the size given", () =>
    Effect.gen(function* () {
      expect(SHARED_BUFFERS).toBe("8MB")
      expect(yield* sharedBuffers({})).toBe("8MB")
      expect(yield* sharedBuffers({ sharedBuffers: "16MB" })).toBe("16MB")
    }), { timeout: 60_000 })
})
