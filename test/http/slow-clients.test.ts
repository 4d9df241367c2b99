import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { rawSocket } from "../support/raw-http.ts"
import { request, testServer } from "../support/server.ts"

/** The promise's value, or a failure after `ms` of real time. */
const within = <A>(promise: Promise<A>, ms: number) =>
  Effect.promise(() =>
    Promise.race([promise, new Promise<never>((_, fail) => setTimeout(() => fail(new Error(`nothing within ${ms} ms`)), ms))])
  )

describe("slow and idle connections", () => {
  const overrides = { "server.api.headers_timeout": 0.5, "server.api.request_read_timeout": 1, "server.api.keepalive_timeout": 1 }
  it.layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("cuts off a client that sends its headers slowly (slowloris) with 408", () =>
      Effect.gen(function* () {
        const conn = yield* rawSocket
        conn.socket.write("GET /v2/api/health HTTP/1.1\r\nHost: localhost\r\n")
        // A header line every 100 ms keeps the connection busy, never finishing the headers.
        const trickle = setInterval(() => conn.socket.write("X-Slow: 1\r\n"), 100)
        const elapsed = yield* within(conn.closed, 10_000).pipe(Effect.ensuring(Effect.sync(() => clearInterval(trickle))))
        expect(conn.received()).toMatch(/^HTTP\/1\.1 408/)
        expect(elapsed).toBeLessThan(5_000)
      })
    )

    it.effect("cuts off a client that sends its body slowly with 408", () =>
      Effect.gen(function* () {
        const conn = yield* rawSocket
        conn.socket.write("POST /v2/api/flows/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{")
        const trickle = setInterval(() => conn.socket.write(" "), 100)
        const elapsed = yield* within(conn.closed, 10_000).pipe(Effect.ensuring(Effect.sync(() => clearInterval(trickle))))
        expect(conn.received()).toMatch(/^HTTP\/1\.1 408/)
        expect(elapsed).toBeLessThan(6_000)
        // The server is none the worse for it.
        expect((yield* request("POST", "/flows/filter", { body: {} })).status).toBe(200)
      })
    )

    it.effect("closes an idle keep-alive connection after keepalive_timeout", () =>
      Effect.gen(function* () {
        const conn = yield* rawSocket
        conn.socket.write("GET /v2/api/health HTTP/1.1\r\nHost: localhost\r\nConnection: keep-alive\r\n\r\n")
        const elapsed = yield* within(conn.closed, 10_000)
        expect(conn.received()).toMatch(/^HTTP\/1\.1 200/)
        expect(conn.received()).toContain("Keep-Alive: timeout=1")
        expect(elapsed).toBeGreaterThanOrEqual(900)
        expect(elapsed).toBeLessThan(5_000)
      })
    )
  })
})
