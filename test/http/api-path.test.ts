import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, List, Logger } from "effect"
import { keepsTextIn, nodeRequestClass } from "../../src/http/api-path.ts"
import { frontHandlerOf, NodeServer, serveInFront } from "../../src/http/node-server.ts"
import { abandonedBody, rawSocket } from "../support/raw-http.ts"
import { request, testServer } from "../support/server.ts"

const lines: Array<{ level: string; message: unknown }> = []
const capture = Logger.make(({ logLevel, message }) => {
  lines.push({ level: logLevel.label, message: List.isList(message) ? List.toArray(message)[0] : Array.isArray(message) ? message[0] : message })
})

/** Counts the requests Baton's request path takes (http/api-path.ts) while `body` runs. */
const takenWhile = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const server = yield* NodeServer
    const front = frontHandlerOf(server)
    expect(front).toBeDefined()
    const taken: Array<string> = []
    serveInFront(server, (message, response) => {
      const took = front!(message, response)
      if (took) taken.push(`${message.method} ${message.url}`)
      return took
    })
    const result = yield* Effect.ensuring(body, Effect.sync(() => serveInFront(server, front)))
    return [taken, result] as const
  })

describe("Baton's request path for the Api's endpoints", () => {
  it.layer(testServer().pipe(Layer.provide(Logger.replace(Logger.defaultLogger, capture))), { timeout: 60_000 })((it) => {
    it.effect("serves the Api's endpoints, and leaves the docs, the UI, preflights and unknown paths to the platform", () =>
      Effect.gen(function* () {
        const [taken, answers] = yield* takenWhile(Effect.all([
          request("GET", "/version"),
          request("POST", "/flows/", { body: { name: "front" } }),
          request("POST", "/flows/filter", { body: { limit: 1 } }),
          // The router takes it for GET /flows/{id}; the Api answers as the reference's router does.
          request("GET", "/flows/filter"),
          request("POST", "/flows/", { body: { name: 1 } }),
          request("GET", "/openapi.json"),
          request("GET", "/no-such-path"),
          request("OPTIONS", "/flows/", { headers: { origin: "http://ui.example", "access-control-request-method": "POST" } }),
          request("GET", "/ui-settings", { fromRoot: true })
        ]))
        expect(answers.map((a) => a.status)).toEqual([200, 201, 200, 405, 422, 200, 404, 200, 200])
        expect(answers[1]!.body.name).toBe("front")
        expect(answers[3]!.headers.get("allow")).toBe("POST")
        expect(answers[4]!.body.detail[0].loc).toEqual(["body", "name"])
        expect(taken).toEqual([
          "GET /v2/api/version",
          "POST /v2/api/flows/",
          "POST /v2/api/flows/filter",
          "GET /v2/api/flows/filter",
          "POST /v2/api/flows/"
        ])
      })
    )

    it.effect("a client that goes away while sending its body is no server error, and the server serves on", () =>
      Effect.gen(function* () {
        const [taken] = yield* takenWhile(abandonedBody)
        expect(taken).toEqual(["POST /v2/api/flows/"])
        // Time for the aborted request's fiber to end (interrupted when its response closed).
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 300)))
        expect(lines.filter((l) => l.level === "ERROR").map((l) => String(l.message))).toEqual([])
        expect((yield* request("POST", "/flows/filter", { body: {} })).status).toBe(200)
      })
    )

    it.effect("reads a body that comes in pieces, a character split between two of them", () =>
      Effect.gen(function* () {
        const name = "fluß-✓-日本"
        const body = Buffer.from(JSON.stringify({ name }))
        // Inside the three bytes of ✓.
        const cut = body.indexOf(Buffer.from("✓")) + 1
        const { socket, received, closed } = yield* rawSocket
        const [taken] = yield* takenWhile(Effect.promise(async () => {
          socket.write(`POST /v2/api/flows/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`)
          socket.write(body.subarray(0, cut))
          await new Promise((resolve) => setTimeout(resolve, 100))
          socket.write(body.subarray(cut))
          await closed
        }))
        expect(taken).toEqual(["POST /v2/api/flows/"])
        const answer = received()
        expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 201 Created")
        expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)).name).toBe(name)
      })
    )
  })

  it.effect("reads the body of platform-node's requests where its request path puts it (not through the platform's stream)", () =>
    Effect.gen(function* () {
      const Class = yield* nodeRequestClass
      expect(Class).toBeDefined()
      expect(keepsTextIn(Class!)).toBe(true)
    })
  )
})
