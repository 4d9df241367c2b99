import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { AddressInfo } from "node:net"
import { makeNodeServer } from "../../src/http/node-server.ts"
import { loadSettings } from "../../src/settings/settings.ts"

describe("the node server", () => {
  it.live("answers a request that came before the handler was attached, once it is (the port opens first)", () =>
    Effect.gen(function* () {
      const settings = yield* loadSettings({ "server.api.port": 0 })
      const server = makeNodeServer(settings, { logsRequests: false })
      yield* Effect.addFinalizer(() => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve()))))
      yield* Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve())))
      const port = (server.address() as AddressInfo).port
      const health = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/v2/api/health`))
      expect(health.status).toBe(200)
      // A request right after the first liveness answer, before the handler is attached.
      const early = fetch(`http://127.0.0.1:${port}/v2/api/ready`).then(async (res) => [res.status, await res.text()] as const)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 200)))
      server.on("request", (_request, response) => response.end("handled"))
      const answer = yield* Effect.promise(() => early).pipe(Effect.timeout("5 seconds"))
      expect(answer).toEqual([200, "handled"])
    }).pipe(Effect.scoped), 20_000)
})
