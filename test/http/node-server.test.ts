/**
 * The Node server before the Api's handlers are attached: the port is open from the moment the
 * server listens (and, with --workers, a worker that starts beside serving ones is handed
 * connections at once), so a request that comes first waits for the handler instead of going
 * unanswered.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { makeNodeServer } from "../../src/http/node-server.ts"
import { loadSettings } from "../../src/settings/settings.ts"

/** GET `path`, resolving with the status and body. */
const get = (port: number, path: string) =>
  new Promise<{ readonly status: number; readonly body: string }>((resolve, reject) => {
    http.get({ host: "127.0.0.1", port, path, agent: false }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => (body += chunk))
      res.on("end", () => resolve({ status: res.statusCode!, body }))
    }).on("error", reject)
  })

describe("the node server", () => {
  it.scopedLive("keeps the requests that come before the handler is attached, and hands them to it", () =>
    Effect.gen(function* () {
      const settings = yield* loadSettings().pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
      const server = makeNodeServer(settings, { logsRequests: false })
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
        () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
      )
      const port = (server.address() as AddressInfo).port
      const early = [get(port, "/v2/api/version"), get(port, "/v2/api/flows/")]
      // Liveness is answered meanwhile, by the server itself.
      expect(yield* Effect.promise(() => get(port, "/v2/api/health"))).toEqual({ status: 200, body: "true" })
      yield* Effect.sleep("300 millis")
      server.on("request", (request: http.IncomingMessage, response: http.ServerResponse) => response.end(`late ${request.url}`))
      expect(yield* Effect.promise(() => Promise.all(early))).toEqual([
        { status: 200, body: "late /v2/api/version" },
        { status: 200, body: "late /v2/api/flows/" }
      ])
      // And later ones go straight to it.
      expect(yield* Effect.promise(() => get(port, "/v2/api/version"))).toEqual({ status: 200, body: "late /v2/api/version" })
    }))
})
