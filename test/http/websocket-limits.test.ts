import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as net from "node:net"
import { rawRequest } from "../support/raw-http.ts"
import { request, serverUrl, testServer } from "../support/server.ts"
import { connect, opened, type TestSocket } from "../support/websocket.ts"

// `layer`, not `it.layer`: each describe below has a server of its own, with its own settings.

const realSleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

/** The server answers the liveness probe at once and an API request, after whatever the test did. */
const servesWith = (headers: Record<string, string>) =>
  Effect.gen(function* () {
    const started = Date.now()
    expect((yield* request("GET", "/health")).status).toBe(200)
    expect(Date.now() - started).toBeLessThan(1000)
    expect((yield* request("POST", "/flows/filter", { body: {}, headers })).status).toBe(200)
  })
const stillServes = servesWith({})

/** A socket on `path` that has authenticated. */
const authenticated = (path: string, headers: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const socket = opened(yield* connect(path, ["prefect"], headers))
    socket.send({ type: "auth", token: null })
    expect(yield* Effect.promise(() => socket.next())).toEqual({ type: "auth_success" })
    return socket
  })

const closeAll = (sockets: ReadonlyArray<TestSocket>) =>
  Effect.promise(() => {
    for (const socket of sockets) socket.close()
    return Promise.all(sockets.map((socket) => socket.closed))
  })

const upgradeHeaders = {
  connection: "Upgrade",
  upgrade: "websocket",
  "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
  "sec-websocket-version": "13",
  "sec-websocket-protocol": "prefect"
}

/** A websocket spoken by hand on a TCP connection: the bytes the server sent, and when it closed. */
const handRolled = (path: string) =>
  Effect.flatMap(serverUrl, (root) =>
    Effect.async<{ readonly socket: net.Socket; readonly received: () => Buffer; readonly closed: Promise<void> }>((resume) => {
      const url = new URL(root)
      const socket = net.connect(Number(url.port), url.hostname)
      const chunks: Array<Buffer> = []
      const closed = new Promise<void>((done) => socket.on("close", () => done()))
      socket.on("data", (chunk) => chunks.push(chunk))
      socket.on("error", () => {})
      socket.on("connect", () => {
        const head = Object.entries(upgradeHeaders).map(([name, value]) => `${name}: ${value}\r\n`).join("")
        socket.write(`GET /v2/api${path} HTTP/1.1\r\nhost: ${url.host}\r\n${head}\r\n`)
        resume(Effect.succeed({ socket, received: () => Buffer.concat(chunks), closed }))
      })
    })
  )

/** The close frame the server sent after its 101, as code and reason. */
const closeFrameIn = (bytes: Buffer) => {
  const start = bytes.indexOf("\r\n\r\n") + 4
  expect(bytes.subarray(0, 12).toString()).toBe("HTTP/1.1 101")
  const frame = bytes.subarray(start)
  expect(frame[0]).toBe(0x88)
  const length = frame[1]! & 0x7f
  return { code: frame.readUInt16BE(2), reason: frame.subarray(4, 2 + length).toString() }
}

/** A masked client text frame whose header announces `announced` bytes, with `payload` after it. */
const frameHeader = (announced: number) => {
  const header = Buffer.alloc(14)
  header[0] = 0x81
  header[1] = 0x80 | 127
  header.writeBigUInt64BE(BigInt(announced), 2)
  return header // the mask (bytes 10 to 13) is zero: the payload goes as it is
}

describe("websocket authentication deadline and bounds (server.api.websockets)", () => {
  const overrides = {
    "server.api.websockets.auth_timeout": 2,
    "server.api.websockets.max_unauthenticated": 3,
    "server.api.websockets.max_open": 5,
    "server.api.max_concurrent_requests": 2
  }
  layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("closes a socket that sends nothing within the deadline, with 1008 and a reason", () =>
      Effect.gen(function* () {
        const started = Date.now()
        const silent = opened(yield* connect("/events/in"))
        // A client that authenticates in time is not closed by the deadline (opened beside the silent one).
        const socket = yield* authenticated("/events/in")
        expect(yield* Effect.promise(() => silent.closed)).toEqual({ code: 1008, reason: "No authentication within 2 s" })
        const waited = Date.now() - started
        expect(waited).toBeGreaterThanOrEqual(1900)
        expect(waited).toBeLessThan(6000)
        yield* realSleep(Math.max(0, 2300 - (Date.now() - started)))
        socket.send({ id: "not an event" })
        expect((yield* Effect.promise(() => socket.closed)).code).toBe(1007)
        yield* stillServes
      })
    )

    it.effect("caps unauthenticated sockets apart from requests in flight, and refuses the next one with 503", () =>
      Effect.gen(function* () {
        const silent = yield* Effect.forEach([1, 2, 3], () => Effect.map(connect("/events/out"), opened))
        // Three silent sockets take none of the two request slots.
        const results = yield* Effect.all([1, 2].map(() => request("POST", "/flows/filter", { body: {} })), { concurrency: 2 })
        expect(results.map((r) => r.status)).toEqual([200, 200])
        expect((yield* request("GET", "/health")).status).toBe(200)
        const refused = yield* rawRequest("GET", "/v2/api/events/out", { headers: upgradeHeaders })
        expect(refused.status).toBe(503)
        expect(refused.headers["retry-after"]).toBe("1")
        expect(refused.body).toEqual({ detail: "The server has as many websockets waiting to authenticate as it allows; retry later." })
        expect(yield* connect("/logs/out")).toEqual({ refused: 503 })
        // The deadline gives their places back.
        yield* Effect.promise(() => Promise.all(silent.map((socket) => socket.closed)))
        yield* realSleep(100)
        const socket = yield* authenticated("/events/out")
        socket.close()
        yield* Effect.promise(() => socket.closed)
        yield* stillServes
      })
    )

    it.effect("caps open sockets, authenticated or not, apart from requests in flight", () =>
      Effect.gen(function* () {
        const sockets = yield* Effect.forEach([1, 2, 3, 4, 5], () => authenticated("/events/in"))
        const refused = yield* rawRequest("GET", "/v2/api/events/in", { headers: upgradeHeaders })
        expect(refused.status).toBe(503)
        expect(refused.body).toEqual({ detail: "The server has as many websockets open as it allows; retry later." })
        const results = yield* Effect.all([1, 2].map(() => request("POST", "/flows/filter", { body: {} })), { concurrency: 2 })
        expect(results.map((r) => r.status)).toEqual([200, 200])
        yield* closeAll(sockets.slice(0, 1))
        yield* realSleep(100)
        const another = yield* authenticated("/events/in")
        yield* closeAll([...sockets.slice(1), another])
        yield* stillServes
      })
    )

    it.effect("accepts a handshake from any origin while CSRF protection is off", () =>
      Effect.gen(function* () {
        const socket = yield* authenticated("/events/out", { origin: "https://elsewhere.example" })
        yield* closeAll([socket])
      })
    )
  })
})

describe("websocket frame sizes", () => {
  // After authentication a message may be maximum_size_bytes plus 64 KiB of room: 84,000 bytes here.
  const overrides = { "server.events.maximum_size_bytes": 18464 }
  layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("closes a socket whose message before authentication is over a few KB with 1009", () =>
      Effect.gen(function* () {
        const socket = opened(yield* connect("/events/in"))
        socket.send({ type: "auth", token: "x".repeat(10_000) })
        const closed = yield* Effect.promise(() => socket.closed)
        expect(closed.code).toBe(1009)
        expect(closed.reason).toMatch(/^Message of 100\d\d bytes is over the limit of 8192 bytes$/)
        yield* stillServes
      })
    )

    it.effect("refuses a frame by its header, before its payload comes", () =>
      Effect.gen(function* () {
        // A 100 MiB frame is announced and only 1 KB of it is sent: the close comes all the same.
        const client = yield* handRolled("/events/in")
        yield* realSleep(200)
        client.socket.write(Buffer.concat([frameHeader(100 * 1024 * 1024), Buffer.alloc(1024, 0x61)]))
        yield* Effect.promise(() => client.closed)
        expect(closeFrameIn(client.received())).toEqual({ code: 1009, reason: "Message of 104857600 bytes is over the limit of 8192 bytes" })
        yield* stillServes
      })
    )

    it.effect("closes a socket whose message after authentication is over about maximum_size_bytes with 1009", () =>
      Effect.gen(function* () {
        const socket = yield* authenticated("/events/in")
        socket.send({ event: "big", payload: "x".repeat(90_000) })
        const closed = yield* Effect.promise(() => socket.closed)
        expect(closed.code).toBe(1009)
        expect(closed.reason).toMatch(/^Message of 900\d\d bytes is over the limit of 84000 bytes$/)
        // A message under the limit is read: this invalid event is refused with its reason cut to
        // 123 bytes, at once however long the message it quotes.
        const other = yield* authenticated("/events/in")
        const started = Date.now()
        other.send({ id: crypto.randomUUID(), event: "big", occurred: new Date().toISOString(), resource: { "prefect.resource.id": "r" }, payload: "x".repeat(80_000) })
        const refused = yield* Effect.promise(() => other.closed)
        expect(Date.now() - started).toBeLessThan(1000)
        expect(refused.code).toBe(1007)
        expect(refused.reason).toMatch(/^Invalid event: /)
        expect(Buffer.byteLength(refused.reason)).toBe(123)
        yield* stillServes
      })
    )

    it.effect("bounds a message sent in many fragments, and every byte before authentication", () =>
      Effect.gen(function* () {
        const client = yield* handRolled("/logs/out")
        yield* realSleep(200)
        // Fragments of 1000 bytes that never finish the message (FIN unset, then continuations).
        const fragment = (first: boolean) =>
          Buffer.concat([Buffer.from([first ? 0x01 : 0x00, 0x80 | 126, 0x03, 0xe8, 0, 0, 0, 0]), Buffer.alloc(1000, 0x20)])
        client.socket.write(Buffer.concat([fragment(true), ...Array.from({ length: 9 }, () => fragment(false))]))
        yield* Effect.promise(() => client.closed)
        const close = closeFrameIn(client.received())
        expect(close.code).toBe(1009)
        // Whichever is seen first: the message's length from its ninth header, or the bytes received.
        expect(close.reason).toMatch(/^(Message of 9000 bytes is over the limit of 8192 bytes|More than 8192 bytes sent before authenticating)$/)
        yield* stillServes
      })
    )
  })
})

describe("slow websocket readers (server.api.websockets.max_buffered_bytes)", () => {
  const overrides = { "server.api.websockets.max_buffered_bytes": 65536, "server.api.websockets.send_timeout": 0.5 }
  layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("closes an /events/out subscriber that stops reading, and keeps serving the others", () =>
      Effect.gen(function* () {
        const subscribe = () =>
          Effect.gen(function* () {
            const socket = yield* authenticated("/events/out")
            socket.send({ type: "filter", filter: { event: { prefix: ["slow."] } }, backfill: false })
            return socket
          })
        const stalled = yield* subscribe()
        const reader = yield* subscribe()
        yield* realSleep(200)
        stalled.raw.pause()
        // 100 events of 100 KB each: more than the kernel's buffers and the bound together.
        const published = 100
        for (let batch = 0; batch < published / 10; batch++) {
          const events = Array.from({ length: 10 }, (_, i) => ({
            id: crypto.randomUUID(),
            occurred: new Date().toISOString(),
            event: `slow.${batch * 10 + i}`,
            resource: { "prefect.resource.id": "slow.thing" },
            payload: { blob: "x".repeat(100_000) }
          }))
          expect((yield* request("POST", "/events", { body: events })).status).toBe(204)
        }
        // The reading subscriber gets every event.
        for (let i = 0; i < published; i++) {
          expect((yield* Effect.promise(() => reader.next())).event.event).toBe(`slow.${i}`)
        }
        // The server gave up on the other after send_timeout; it reads again and finds the close.
        yield* realSleep(1000)
        let received = 0
        stalled.raw.on("message", () => received++)
        stalled.raw.resume()
        const closed = yield* Effect.promise(() => stalled.closed)
        expect(closed).toEqual({ code: 1008, reason: "Client too slow: more than 65536 bytes left unread for 0.5 s" })
        // What it was sent before the close is what the network held, not every event.
        expect(received).toBeLessThan(published)
        reader.close()
        yield* Effect.promise(() => reader.closed)
        yield* stillServes
      })
    )
  })
})

describe("reading websocket messages no further ahead than the server handles them", () => {
  layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("takes a burst of events over /events/in in order, none lost, while the socket pauses and resumes", () =>
      Effect.gen(function* () {
        const out = yield* authenticated("/events/out")
        out.send({ type: "filter", filter: { event: { prefix: ["burst."] } }, backfill: false })
        yield* realSleep(200)
        const inbound = yield* authenticated("/events/in")
        const count = 200
        for (let i = 0; i < count; i++) {
          inbound.send({
            id: crypto.randomUUID(),
            occurred: new Date().toISOString(),
            event: `burst.${i}`,
            resource: { "prefect.resource.id": "burst.thing" }
          })
        }
        for (let i = 0; i < count; i++) {
          expect((yield* Effect.promise(() => out.next())).event.event).toBe(`burst.${i}`)
        }
        yield* closeAll([out, inbound])
        yield* stillServes
      })
    )
  })
})

describe("websocket origins with CSRF protection on", () => {
  const overrides = {
    "server.api.csrf_protection_enabled": true,
    "server.api.cors_allowed_origins": "https://ui.example.com"
  }
  layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("refuses a handshake from an origin CORS does not allow with 403", () =>
      Effect.gen(function* () {
        expect(yield* connect("/events/out", ["prefect"], { origin: "https://evil.example" })).toEqual({ refused: 403 })
        const refused = yield* rawRequest("GET", "/v2/api/events/in", { headers: { ...upgradeHeaders, origin: "null" } })
        expect(refused.status).toBe(403)
        expect(refused.body).toEqual({ detail: "Websocket connections from this origin are not allowed (server.api.cors_allowed_origins)." })
        const token = (yield* request("GET", "/csrf-token?client=probe")).body.token as string
        yield* servesWith({ "prefect-csrf-token": token, "prefect-csrf-client": "probe" })
      })
    )

    it.effect("accepts an allowed origin, the server's own, and clients that send none", () =>
      Effect.gen(function* () {
        const root = yield* serverUrl
        const sockets = [
          yield* authenticated("/events/out", { origin: "https://ui.example.com" }),
          yield* authenticated("/events/out", { origin: root }),
          yield* authenticated("/events/out")
        ]
        yield* closeAll(sockets)
      })
    )
  })
})

describe("websocket pings (server.api.websockets.ping_interval)", () => {
  layer(testServer({ overrides: { "server.api.websockets.ping_interval": 0.2, "server.logs.stream_out_enabled": true } }), { timeout: 60_000 })((it) => {
    it.effect("disconnects a client that answers no ping, and keeps one that does", () =>
      Effect.gen(function* () {
        const live = yield* authenticated("/logs/out")
        const mute = opened(yield* connect("/logs/out", ["prefect"], {}, { autoPong: false }))
        mute.send({ type: "auth", token: null })
        expect(yield* Effect.promise(() => mute.next())).toEqual({ type: "auth_success" })
        // Subscribed; what the client sends after its filter is read and dropped, so it never
        // stops the server from hearing the client (or not hearing it).
        for (const socket of [live, mute]) socket.send({ type: "filter", filter: {} })
        yield* realSleep(100)
        for (let i = 0; i < 40; i++) mute.send({ type: "noise", i })
        let pings = 0
        mute.raw.on("ping", () => pings++)
        const started = Date.now()
        expect(yield* Effect.promise(() => mute.closed)).toEqual({ code: 1006, reason: "" })
        expect(Date.now() - started).toBeLessThan(3000)
        expect(pings).toBeGreaterThanOrEqual(1)
        // The other answers every ping and is still open.
        yield* realSleep(600)
        expect(live.raw.readyState).toBe(1)
        yield* closeAll([live])
        yield* stillServes
      })
    )
  })
})
