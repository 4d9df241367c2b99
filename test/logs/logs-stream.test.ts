import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { logMatches } from "../../src/logs/stream.ts"
import { request, testServer } from "../support/server.ts"
import { connect, opened } from "../support/websocket.ts"

const FLOW_RUN = "11111111-1111-4111-8111-111111111111"
const now = () => new Date().toISOString()

/** A wall-clock pause (the test clock does not move on its own). */
const pause = (ms: number) => Effect.promise(() => new Promise((done) => setTimeout(done, ms)))

const post = (logs: Array<Record<string, unknown>>) => request("POST", "/logs/", { body: logs })

describe("live log filters", () => {
  const log = {
    id: "44444444-4444-4444-8444-444444444444",
    created: null,
    updated: null,
    name: "prefect.task_runs",
    level: 20,
    message: "Connection timeout",
    timestamp: new Date("2026-01-01T00:00:10Z"),
    flow_run_id: FLOW_RUN,
    task_run_id: null
  }
  it("match as /logs/filter does: bounds inclusive, and_/or_, runs, null task runs, text", () => {
    expect(logMatches(log, undefined)).toBe(true)
    expect(logMatches(log, { operator: "and_", level: { ge_: 20, le_: 20 } })).toBe(true)
    expect(logMatches(log, { operator: "and_", level: { ge_: 30 } })).toBe(false)
    expect(logMatches(log, { operator: "and_", timestamp: { after_: new Date("2026-01-01T00:00:10Z") } })).toBe(true)
    expect(logMatches(log, { operator: "and_", timestamp: { before_: new Date("2026-01-01T00:00:09Z") } })).toBe(false)
    expect(logMatches(log, { operator: "and_", flow_run_id: { any_: [] } })).toBe(false)
    expect(logMatches(log, { operator: "and_", task_run_id: { is_null_: true } })).toBe(true)
    expect(logMatches(log, { operator: "and_", task_run_id: { is_null_: false } })).toBe(false)
    expect(logMatches(log, { operator: "and_", text: { query: "timeout -debug" } })).toBe(true)
    expect(logMatches(log, { operator: "and_", text: { query: "+missing timeout" } })).toBe(false)
    expect(logMatches(log, { operator: "or_", level: { ge_: 30 }, text: { query: "connection" } })).toBe(true)
    expect(logMatches(log, { operator: "and_", level: { ge_: 30 }, text: { query: "connection" } })).toBe(false)
  })
})

describe("live logs over /logs/out", () => {
  it.layer(testServer({ overrides: { "server.logs.stream_out_enabled": true } }), { timeout: 60_000 })((it) => {
    it.effect("streams the new logs a filter matches, after the auth and filter messages", () =>
      Effect.gen(function* () {
        const socket = opened(yield* connect("/logs/out"))
        socket.send({ type: "auth", token: null })
        expect(yield* Effect.promise(() => socket.next())).toEqual({ type: "auth_success" })
        socket.send({ type: "filter", filter: { level: { ge_: 20 }, flow_run_id: { any_: [FLOW_RUN] } } })
        // Give the server a moment to subscribe before logs are posted.
        yield* pause(200)
        expect(
          (yield* post([
            { name: "a", level: 10, message: "too quiet", timestamp: now(), flow_run_id: FLOW_RUN },
            { name: "a", level: 40, message: "another run", timestamp: now() },
            { name: "a", level: 30, message: "Test message 1", timestamp: now(), flow_run_id: FLOW_RUN },
            { name: "a", level: 20, message: "Test message 2", timestamp: now(), flow_run_id: FLOW_RUN }
          ])).status
        ).toBe(201)
        const first = yield* Effect.promise(() => socket.next())
        const second = yield* Effect.promise(() => socket.next())
        expect(first.type).toBe("log")
        expect([first.log.message, second.log.message]).toEqual(["Test message 1", "Test message 2"])
        expect(first.log).toMatchObject({ level: 30, flow_run_id: FLOW_RUN, task_run_id: null, name: "a" })
        // The streamed log is the stored one.
        const stored = (yield* request("POST", "/logs/filter", { body: { logs: { flow_run_id: { any_: [FLOW_RUN] }, level: { ge_: 30 } } } })).body
        expect(stored.map((l) => l.id)).toEqual([first.log.id])
        socket.close()
      })
    )

    it.effect("accepts clients without the prefect subprotocol (no auth message) when no auth string is set", () =>
      Effect.gen(function* () {
        const socket = opened(yield* connect("/logs/out", []))
        socket.send({ type: "filter", filter: { text: { query: "needle" } } })
        yield* pause(200)
        yield* post([
          { name: "a", level: 20, message: "hay", timestamp: now() },
          { name: "a", level: 20, message: "a needle here", timestamp: now() }
        ])
        expect((yield* Effect.promise(() => socket.next())).log.message).toBe("a needle here")
        socket.close()
      })
    )

    it.effect("closes with the reason when the first messages are not what it expects", () =>
      Effect.gen(function* () {
        const noAuth = opened(yield* connect("/logs/out"))
        noAuth.send({ type: "filter", filter: {} })
        expect(yield* Effect.promise(() => noAuth.closed)).toEqual({ code: 1008, reason: "Expected 'auth' message" })

        const noFilter = opened(yield* connect("/logs/out"))
        noFilter.send({ type: "auth", token: "my-token" })
        expect(yield* Effect.promise(() => noFilter.next())).toEqual({ type: "auth_success" })
        noFilter.send({ type: "what?", filter: {} })
        expect(yield* Effect.promise(() => noFilter.closed)).toEqual({ code: 1002, reason: "Expected 'filter' message" })

        const badFilter = opened(yield* connect("/logs/out"))
        badFilter.send({ type: "auth" })
        yield* Effect.promise(() => badFilter.next())
        badFilter.send({ type: "filter", filter: "invalid_filter" })
        const closed = yield* Effect.promise(() => badFilter.closed)
        expect(closed.code).toBe(1002)
        expect(closed.reason).toMatch(/^Invalid filter: /)
      })
    )

    it.effect("stores a batch of 1000 log lines in one request", () =>
      Effect.gen(function* () {
        const run = "33333333-3333-4333-8333-333333333333"
        const batch = Array.from({ length: 1000 }, (_, i) => ({
          name: "batch",
          level: 20,
          message: `line ${i}`,
          timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)).toISOString(),
          flow_run_id: run
        }))
        expect((yield* post(batch)).status).toBe(201)
        const page = (offset: number) =>
          Effect.map(request("POST", "/logs/filter", { body: { logs: { flow_run_id: { any_: [run] } }, offset } }), (res) => res.body)
        const first = yield* page(0)
        const last = yield* page(800)
        expect(first).toHaveLength(200)
        expect(first[0].message).toBe("line 0")
        expect(last[last.length - 1].message).toBe("line 999")
      })
    )
  })
})
