/**
 * `GET {base}/metrics` (server.metrics_enabled): what each series says after what a user does,
 * read from the Prometheus text the server answers with.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Clock, Context, Duration, Effect, Fiber, Layer, TestClock } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { BatonApi } from "../../src/api.ts"
import { requestRecorder } from "../../src/http/metrics.ts"
import { apiServer } from "../../src/server.ts"
import { layer as settingsLayer } from "../../src/settings/settings.ts"
import { EventPersister } from "../../src/events/persister.ts"
import { FLOW_RUNS_TTL, Metrics } from "../../src/http/metrics-registry.ts"
import { runBackgroundServices } from "../../src/services/registry.ts"
import { defineService, runServices } from "../../src/services/runner.ts"
import { BATON_VERSION } from "../../src/version.ts"
import { ok } from "../support/api.ts"
import { eventually } from "../support/eventually.ts"
import { type Exposition, parseExposition, scrape } from "../support/metrics.ts"
import { onServer, scopedDatabase, seededHome } from "../support/database.ts"
import { buildInServer, request, testServer } from "../support/server.ts"
import { connect } from "../support/websocket.ts"

const HTTP = "baton_http_request_duration_seconds"

/** How many requests of `method` `route` answered `status` the exposition counts. */
const requests = (metrics: Exposition, method: string, route: string, status: number) =>
  metrics.value(`${HTTP}_count`, { method, route, status: String(status) }) ?? 0

let counter = 0
const eventId = () => `00000000-0000-4000-8000-${String(++counter).padStart(12, "0")}`
const anEvent = Effect.map(Clock.currentTimeMillis, (millis) => ({
  id: eventId(),
  occurred: new Date(millis).toISOString(),
  event: "metrics.test",
  resource: { "prefect.resource.id": "thing.metrics" }
}))

describe("metrics on", () => {
  it.layer(testServer({ overrides: { "server.metrics_enabled": true } }), { timeout: 60_000 })((it) => {
    it.effect("serves the process and runtime defaults and Baton's own series as Prometheus text", () =>
      Effect.gen(function* () {
        const metrics = yield* scrape()
        for (const name of ["process_cpu_user_seconds_total", "process_resident_memory_bytes", "nodejs_heap_size_used_bytes", "nodejs_eventloop_lag_seconds"]) {
          expect(metrics.families.has(name), name).toBe(true)
        }
        expect(metrics.value("process_resident_memory_bytes")).toBeGreaterThan(0)
        expect(metrics.value("baton_info", { version: BATON_VERSION })).toBe(1)
        expect(metrics.families.get(HTTP)?.type).toBe("histogram")
      })
    )

    it.effect("documents every series it serves in docs/metrics.md, and serves every one documented", () =>
      Effect.gen(function* () {
        const metrics = yield* scrape()
        const served = [...metrics.families.keys()].filter((name) => name.startsWith("baton_")).sort()
        const doc = fs.readFileSync(path.resolve(import.meta.dirname, "../../docs/metrics.md"), "utf8")
        const documented = [...doc.matchAll(/^\| `(baton_\w+)` \|/gm)].map((m) => m[1]!).sort()
        expect(served.length).toBeGreaterThan(10)
        expect(served).toEqual(documented)
      })
    )

    it.effect("counts requests by route template, method and status, with their durations", () =>
      Effect.gen(function* () {
        const before = yield* scrape()
        const id = crypto.randomUUID()
        expect((yield* request("POST", "/flows/", { body: { name: "metered" } })).status).toBe(201)
        expect((yield* request("GET", `/flows/${id}`)).status).toBe(404)
        expect((yield* request("GET", "/flows/not-an-id")).status).toBe(404)
        expect((yield* request("POST", "/flows/filter", { body: {} })).status).toBe(200)
        expect((yield* request("GET", `/no/such/${id}`)).status).toBe(404)
        expect((yield* request("GET", "/", { fromRoot: true })).status).toBe(404)
        const after = yield* scrape()

        const moved = (method: string, route: string, status: number) => requests(after, method, route, status) - requests(before, method, route, status)
        expect(moved("POST", "/flows", 201)).toBe(1)
        expect(moved("GET", "/flows/{id}", 404)).toBe(2)
        expect(moved("POST", "/flows/filter", 200)).toBe(1)
        expect(moved("GET", "unmatched", 404)).toBe(1)
        expect(moved("GET", "outside", 404)).toBe(1)
        // The scrape before this one is a request too.
        expect(moved("GET", "/metrics", 200)).toBe(1)
        // Every request lands in the +Inf bucket, and took some time.
        const labels = { method: "POST", route: "/flows", status: "201" }
        expect(after.value(`${HTTP}_bucket`, { ...labels, le: "+Inf" })).toBe(requests(after, "POST", "/flows", 201))
        expect(after.value(`${HTTP}_sum`, labels)).toBeGreaterThan(0)
        // Paths are never labels: the ids sent are nowhere in the exposition.
        expect(after.samples.some((s) => Object.values(s.labels).some((v) => v.includes(id) || v.includes("not-an-id")))).toBe(false)
      })
    )

    it.scoped("records each iteration of a background service: duration, last success, failures", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.parse("2030-01-01T00:00:00Z"))
        yield* buildInServer(runBackgroundServices((s) => s.name === "late_runs"))
        const labels = { service: "late_runs", loop: "main" }
        const first = yield* eventually(
          Effect.flatMap(scrape(), (metrics) =>
            (metrics.value("baton_service_iteration_duration_seconds_count", labels) ?? 0) >= 1 ? Effect.succeed(metrics) : Effect.fail("no iteration yet")),
          { nudgeClock: true }
        )
        expect(first.value("baton_service_iteration_failures_total", labels)).toBe(0)
        const lastSuccess = first.value("baton_service_last_success_timestamp_seconds", labels)!
        expect(lastSuccess).toBeGreaterThanOrEqual(Date.parse("2030-01-01T00:00:00Z") / 1000)
        expect(lastSuccess).toBeLessThanOrEqual((yield* Clock.currentTimeMillis) / 1000)

        // A service whose iterations fail: counted, and never a success.
        yield* buildInServer(
          runServices([defineService({ name: "pause_expirations", interval: () => Duration.seconds(5), tick: Effect.fail("broken") })])
        )
        yield* TestClock.adjust(Duration.seconds(11))
        const failing = { service: "pause_expirations", loop: "main" }
        const after = yield* scrape()
        expect(after.value("baton_service_iteration_failures_total", failing)).toBe(3)
        expect(after.value("baton_service_iteration_duration_seconds_count", failing)).toBe(3)
        expect(after.value("baton_service_last_success_timestamp_seconds", failing)).toBeUndefined()
      })
    )

    it.effect("counts the events received, persisted and dropped (one the database refuses), and the persister's backlog", () =>
      Effect.gen(function* () {
        const before = yield* scrape()
        const received = () => before.value("baton_events_received_total") ?? 0
        const events = [yield* anEvent, yield* anEvent, yield* anEvent]
        expect((yield* request("POST", "/events", { body: events })).status).toBe(204)
        const waiting = yield* scrape()
        expect(waiting.value("baton_events_received_total")).toBe(received() + 3)
        expect(waiting.value("baton_event_persister_backlog")).toBe(3)
        expect(waiting.value("baton_events_persisted_total")).toBe(before.value("baton_events_persisted_total"))

        expect(yield* Effect.flatMap(EventPersister, (persister) => persister.drain)).toBeGreaterThanOrEqual(3)
        const written = yield* scrape()
        expect(written.value("baton_events_persisted_total")).toBe((before.value("baton_events_persisted_total") ?? 0) + 3)
        expect(written.value("baton_event_persister_backlog")).toBe(0)
        expect(written.value("baton_events_dropped_total")).toBe(0)

        // An event the database refuses (a resource id too large to index: random text does not
        // compress) is dropped alone, and counted.
        const refused = { ...(yield* anEvent), resource: { "prefect.resource.id": randomBytes(2250).toString("base64") } }
        expect((yield* request("POST", "/events", { body: [yield* anEvent, refused] })).status).toBe(204)
        yield* Effect.flatMap(EventPersister, (persister) => persister.drain)
        const afterRefusal = yield* scrape()
        expect(afterRefusal.value("baton_events_persisted_total")).toBe((before.value("baton_events_persisted_total") ?? 0) + 4)
        expect(afterRefusal.value("baton_events_dropped_total")).toBe(1)
      })
    )

    it.effect("counts an open websocket under its path until it closes", () =>
      Effect.gen(function* () {
        const open = (metrics: Exposition) => metrics.value("baton_websockets_open", { path: "/events/out" }) ?? 0
        const socket = yield* connect("/events/out", [])
        if ("refused" in socket) return expect.fail(`refused: ${socket.refused}`)
        yield* eventually(Effect.flatMap(scrape(), (metrics) => (open(metrics) === 1 ? Effect.void : Effect.fail("not counted yet"))))
        socket.close()
        yield* Effect.promise(() => socket.closed)
        yield* eventually(Effect.flatMap(scrape(), (metrics) => (open(metrics) === 0 ? Effect.void : Effect.fail("still counted"))))
        // The handshake is no HTTP request of the histogram: it lasts as long as the socket.
        expect((yield* scrape()).find(`${HTTP}_count`, { route: "/events/out" })).toEqual([])
      })
    )

    it.effect("counts flow runs by state type, at most once per FLOW_RUNS_TTL", () =>
      Effect.gen(function* () {
        const count = (type: string) =>
          Effect.map(request("POST", "/flow_runs/count", { body: { flow_runs: { state: { type: { any_: [type] } } } } }), (res) => ok(res, 200) as unknown as number)
        const flowId = ok(yield* request("POST", "/flows/", { body: { name: "counted" } }), 201).id
        const first = yield* scrape()
        const scheduledBefore = first.value("baton_flow_runs", { state_type: "SCHEDULED" })!
        expect(first.value("baton_flow_runs", { state_type: "RUNNING" })).toBe(yield* count("RUNNING"))
        expect(first.find("baton_flow_runs").map((s) => s.labels.state_type).sort()).toEqual(["CANCELLING", "PAUSED", "PENDING", "RUNNING", "SCHEDULED"])
        for (let i = 0; i < 3; i++) {
          ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "SCHEDULED" } } }), 201)
        }
        ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "RUNNING" } } }), 201)
        // Counted a moment ago: the next scrape is answered from that count.
        expect((yield* scrape()).value("baton_flow_runs", { state_type: "SCHEDULED" })).toBe(scheduledBefore)
        yield* TestClock.adjust(FLOW_RUNS_TTL)
        const later = yield* scrape()
        expect(later.value("baton_flow_runs", { state_type: "SCHEDULED" })).toBe(yield* count("SCHEDULED"))
        expect(later.value("baton_flow_runs", { state_type: "SCHEDULED" })).toBe(scheduledBefore + 3)
        expect(later.value("baton_flow_runs", { state_type: "RUNNING" })).toBe(yield* count("RUNNING"))
        expect(later.value("baton_flow_runs", { state_type: "COMPLETED" })).toBeUndefined()
      })
    )
  })
})

const AUTH = "prometheus:scrape-me"
const authorized = { authorization: `Basic ${Buffer.from(AUTH).toString("base64")}` }

describe("metrics behind the shared credential", () => {
  layer(testServer({ overrides: { "server.metrics_enabled": true, "server.api.auth_string": AUTH } }), { timeout: 60_000 })((it) => {
    it.effect("answers 401 without the credential, and the metrics with it", () =>
      Effect.gen(function* () {
        const refused = yield* request("GET", "/metrics")
        expect(refused.status).toBe(401)
        expect(refused.body).toEqual({ detail: "Unauthorized" })
        const metrics = yield* scrape(authorized)
        expect(requests(metrics, "GET", "/metrics", 401)).toBe(1)
      })
    )
  })
})

describe("metrics off (the default)", () => {
  layer(testServer(), { timeout: 60_000 })((it) => {
    it.scoped("GET /metrics is a 404 like any path no route takes, and nothing is measured", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", "/metrics")
        expect(res.status).toBe(404)
        expect(res.body).toEqual((yield* request("GET", "/no-such-path")).body)
        // The server's metrics are the no-op ones: the edge gets no recorder (it then serves each
        // request as it would without metrics), and an iteration runs as it is.
        const metrics = Context.get(yield* buildInServer(Metrics.Default), Metrics)
        expect(metrics.enabled).toBe(false)
        expect(requestRecorder(metrics, "/v2/api", BatonApi, [])).toBeUndefined()
        const tick = Effect.void
        expect((yield* metrics.iterations("late_runs", undefined))(tick)).toBe(tick)
      })
    )
  })
})

describe("a source that does not answer", () => {
  it.scoped("is left out of the scrape after a few seconds; the rest is answered", () =>
    Effect.gen(function* () {
      const context = yield* Layer.build(Metrics.Default.pipe(Layer.provide(settingsLayer({ "server.metrics_enabled": true }))))
      const metrics = Context.get(context, Metrics)
      let counts = 0
      // Answers at first, then hangs (a database gone away).
      yield* metrics.flowRuns(Effect.suspend(() => (++counts === 1 ? Effect.succeed(new Map([["RUNNING", 2]])) : Effect.never)))
      const first = parseExposition((yield* metrics.render).body)
      expect(first.value("baton_flow_runs", { state_type: "RUNNING" })).toBe(2)

      yield* TestClock.adjust(FLOW_RUNS_TTL)
      const scraping = yield* Effect.fork(metrics.render)
      yield* TestClock.adjust(Duration.seconds(3))
      const later = parseExposition((yield* Fiber.join(scraping)).body)
      expect(counts).toBe(2)
      expect(later.find("baton_flow_runs")).toEqual([])
      expect(later.value("baton_info", { version: BATON_VERSION })).toBe(1)
    })
  )
})

describe("the database pool", () => {
  it.scopedLive("is reported by a server composed as `baton server start` composes it", () =>
    Effect.gen(function* () {
      const database = onServer() ? { "server.database.connection_url": (yield* scopedDatabase({ migrated: true })).url! } : {}
      const overrides = {
        home: yield* seededHome,
        ...database,
        "server.api.host": "127.0.0.1",
        "server.api.port": 0,
        "server.metrics_enabled": true,
        // One connection on either database: a second statement waits for it.
        "server.database.sqlalchemy.pool_size": 1,
        "server.database.sqlalchemy.max_overflow": 0
      }
      const context = yield* Layer.build(apiServer({ overrides, services: false }))
      const address = Context.get(context, HttpServer.HttpServer).address
      const port = address._tag === "TcpAddress" ? address.port : Number.NaN
      const sql = Context.get(context, SqlClient.SqlClient)
      const get = Effect.promise(() => fetch(`http://127.0.0.1:${port}/v2/api/metrics`).then((res) => res.text()))

      const idle = parseExposition(yield* get)
      expect(idle.value("baton_database_pool_max")).toBe(1)
      expect(idle.value("baton_database_pool_waiting")).toBe(0)

      // A transaction holds the connection (an Effect sleep in it: the embedded database runs in
      // this thread, so a statement that sleeps would stop everything), a statement waits for it.
      yield* Effect.forkScoped(sql.withTransaction(Effect.zipRight(sql`SELECT 1`, Effect.sleep("2 seconds"))))
      yield* Effect.sleep("200 millis")
      yield* Effect.forkScoped(sql`SELECT 2`)
      yield* Effect.sleep("100 millis")
      const busy = parseExposition(yield* get)
      expect(busy.value("baton_database_pool_connections", { state: "in_use" })).toBe(1)
      expect(busy.value("baton_database_pool_connections", { state: "idle" })).toBe(0)
      expect(busy.value("baton_database_pool_waiting")).toBeGreaterThanOrEqual(1)
    }),
    60_000
  )
})
