import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { request, testServer } from "../support/server.ts"
import { connect, opened } from "../support/websocket.ts"

const overrides = { "server.api.auth_string": "admin:pass", "server.logs.stream_out_enabled": true }

describe("websocket handshake with an auth string", () => {
  it.layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("refuses clients without the prefect subprotocol before upgrading", () =>
      Effect.gen(function* () {
        expect(yield* connect("/logs/out", [])).toEqual({ refused: 403 })
        // A plain HTTP request to a websocket route matches nothing.
        expect((yield* request("GET", "/logs/out")).body).toEqual({ detail: "Not Found" })
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
  })
})
