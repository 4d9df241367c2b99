import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { rawRequest } from "../support/raw-http.ts"
import { request, testServer } from "../support/server.ts"
import { connect, opened } from "../support/websocket.ts"

const realSleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

const json = { "content-type": "application/json" }

describe("requests in flight (server.api.max_concurrent_requests)", () => {
  it.layer(testServer({ overrides: { "server.api.max_concurrent_requests": 2 } }), { timeout: 60_000 })((it) => {
    it.effect("answers 503 with Retry-After beyond the bound, and serves again once requests finish", () =>
      Effect.gen(function* () {
        // Two requests whose bodies never come: both stay in flight.
        const stalled = yield* Effect.forEach([1, 2], () =>
          Effect.fork(rawRequest("POST", "/v2/api/flows/", { headers: { ...json, "content-length": "20" }, end: false })))
        yield* realSleep(300)
        const refused = yield* request("POST", "/flows/filter", { body: {} })
        expect(refused.status).toBe(503)
        expect(refused.headers.get("retry-after")).toBe("1")
        expect(refused.body).toEqual({ detail: "The server is handling as many requests as it allows; retry later." })
        // The liveness probe is answered in front of the bound.
        expect((yield* request("GET", "/health")).status).toBe(200)
        // The stalled clients go away; their slots come back.
        yield* Effect.forEach(stalled, Fiber.interrupt)
        yield* realSleep(200)
        const results = yield* Effect.all([1, 2].map(() => request("POST", "/flows/filter", { body: {} })), { concurrency: 2 })
        expect(results.map((r) => r.status)).toEqual([200, 200])
      })
    )

    it.effect("does not count open websockets: they have bounds of their own (server.api.websockets)", () =>
      Effect.gen(function* () {
        const open = () =>
          Effect.gen(function* () {
            const socket = opened(yield* connect("/events/out"))
            socket.send({ type: "auth", token: null })
            expect(yield* Effect.promise(() => socket.next())).toEqual({ type: "auth_success" })
            // Subscribed: the socket stays open until the client closes it.
            socket.send({ type: "filter", filter: { event: { prefix: ["nothing."] } } })
            return socket
          })
        // Twice as many websockets as requests allowed in flight, and requests still get both slots.
        const sockets = yield* Effect.forEach([1, 2, 3, 4], () => open())
        const results = yield* Effect.all([1, 2].map(() => request("POST", "/flows/filter", { body: {} })), { concurrency: 2 })
        expect(results.map((r) => r.status)).toEqual([200, 200])
        for (const socket of sockets) socket.close()
        yield* Effect.promise(() => Promise.all(sockets.map((socket) => socket.closed)))
      })
    )
  })
})
