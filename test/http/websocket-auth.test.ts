import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { request, testServer } from "../support/server.ts"
import { connect, opened } from "../support/websocket.ts"
import { WEBSOCKET_PATHS } from "../../src/http/websocket.ts"

const overrides = { "server.api.auth_string": "admin:pass", "server.logs.stream_out_enabled": true }

describe("websocket handshake with an auth string", () => {
  it.layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("refuses clients without the prefect subprotocol before upgrading", () =>
      Effect.gen(function* () {
        expect(yield* connect("/logs/out", [])).toEqual({ refused: 403 })
        // A plain HTTP request to a websocket route needs the credential, as any request does, and
        // then matches nothing.
        expect((yield* request("GET", "/logs/out")).status).toBe(401)
        const authorization = `Basic ${Buffer.from("admin:pass").toString("base64")}`
        expect((yield* request("GET", "/logs/out", { headers: { authorization } })).body).toEqual({ detail: "Not Found" })
      })
    )

    it.effect("needs the auth string as the token of the auth message", () =>
      Effect.gen(function* () {
        const missing = opened(yield* connect("/logs/out"))
        missing.send({ type: "auth" })
        expect(yield* Effect.promise(() => missing.closed)).toEqual({ code: 1008, reason: "Auth required but no token provided" })

        const wrong = opened(yield* connect("/logs/out"))
        wrong.send({ type: "auth", token: "admin:wrong" })
        expect(yield* Effect.promise(() => wrong.closed)).toEqual({ code: 1008, reason: "Invalid token" })

        const right = opened(yield* connect("/logs/out"))
        right.send({ type: "auth", token: "admin:pass" })
        expect(yield* Effect.promise(() => right.next())).toEqual({ type: "auth_success" })
        right.close()
      })
    )

    it.effect("authenticates every websocket route by its first message, with or without an Authorization header", () =>
      Effect.gen(function* () {
        expect([...WEBSOCKET_PATHS].sort()).toEqual(["/events/in", "/events/out", "/logs/out"])
        const header = { authorization: `Basic ${Buffer.from("admin:pass").toString("base64")}` }
        for (const path of WEBSOCKET_PATHS) {
          // The logs client sends no Authorization header; the events client sends one as well.
          for (const headers of [{}, header]) {
            const socket = opened(yield* connect(path, ["prefect"], headers))
            socket.send({ type: "auth", token: "admin:pass" })
            expect(yield* Effect.promise(() => socket.next()), path).toEqual({ type: "auth_success" })
            socket.close()
          }
          const wrong = opened(yield* connect(path))
          wrong.send({ type: "auth", token: "admin:pas" })
          expect(yield* Effect.promise(() => wrong.closed), path).toEqual({ code: 1008, reason: "Invalid token" })
          const notAuth = opened(yield* connect(path))
          notAuth.send({ type: "filter", filter: {} })
          expect(yield* Effect.promise(() => notAuth.closed), path).toEqual({ code: 1008, reason: "Expected 'auth' message" })
          // The right header does not stand in for the handshake the reference requires.
          expect(yield* connect(path, [], header), path).toEqual({ refused: 403 })
        }
      })
    )
  })
})
