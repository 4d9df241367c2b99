/**
 * The database going away under a running server, on a real PostgreSQL reached through a TCP proxy
 * the test cuts and restores (the PostgreSQL server itself is never touched): requests answer 503
 * with Retry-After within a bounded time, GET /ready says 503 while it is away and 200 after, the
 * background services keep running, and the server recovers by itself. PostgreSQL only: the embedded
 * database lives in the server's own process.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Logger, LogLevel } from "effect"
import pg from "pg"
import { apiServerWith, DatabaseLive } from "../../src/server.ts"
import { layer as settingsLayer, type SettingsOverrides } from "../../src/settings/settings.ts"
import { onServer, scopedDatabase } from "../support/database.ts"
import { type RawResponse, request } from "../support/server.ts"
import { scopedTcpProxy } from "../support/tcp-proxy.ts"
import { idOf } from "../support/api.ts"

/** Seconds of the bounds the server is given here (small, so the test is quick). */
const CONNECTION_TIMEOUT = 1
const STATEMENT_TIMEOUT = 2
const POOL_TIMEOUT = 2
/** The longest a request may take while the database is away: the largest bound plus slack for a loaded machine. */
const ANSWER_WITHIN_MS = (STATEMENT_TIMEOUT + CONNECTION_TIMEOUT + POOL_TIMEOUT) * 1000 + 3000

const realSleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.timed(effect), ([elapsed, value]) => ({ value, ms: Duration.toMillis(elapsed) }))

/** Passes once `check` does, trying every 200 ms for up to `ms` of real time. */
const eventually = <A, E, R>(check: Effect.Effect<A, E, R>, ms = 20_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + ms
    while (true) {
      const exit = yield* Effect.exit(check)
      if (exit._tag === "Success" || Date.now() > deadline) return yield* exit
      yield* realSleep(200)
    }
  })

const expectStatus = (res: RawResponse, status: number) =>
  Effect.suspend(() => (res.status === status ? Effect.succeed(res) : Effect.fail(new Error(`status ${res.status}: ${res.text}`))))

/** A 503 as the database's absence answers: Retry-After, a JSON detail, within the bound. */
const expectUnavailable = (answer: { readonly value: RawResponse; readonly ms: number }, what: string) => {
  expect([what, answer.value.status]).toEqual([what, 503])
  expect(answer.value.headers.get("retry-after")).toBe("5")
  expect(answer.value.body.detail).toBe("The database is unavailable. Try again shortly.")
  expect(answer.ms).toBeLessThan(ANSWER_WITHIN_MS)
}

/**
 * A server with its background services on this test's own database reached through a proxy; the
 * scheduler runs every second so a test sees it working.
 */
const serverThroughProxy = (overrides: SettingsOverrides = {}) =>
  Effect.gen(function* () {
    const database = yield* scopedDatabase({ migrated: true })
    const direct = new URL(database.url!)
    const proxy = yield* scopedTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) })
    const via = new URL(database.url!)
    via.hostname = "127.0.0.1"
    via.port = String(proxy.port)
    const server = apiServerWith({ services: true }).pipe(
      Layer.provideMerge(DatabaseLive),
      Layer.provideMerge(settingsLayer({
        "server.api.host": "127.0.0.1",
        "server.api.port": 0,
        "server.database.connection_url": via.toString(),
        "server.database.connection_timeout": CONNECTION_TIMEOUT,
        "server.database.timeout": STATEMENT_TIMEOUT,
        "server.database.sqlalchemy.pool_timeout": POOL_TIMEOUT,
        "server.services.scheduler.loop_seconds": 1,
        "server.services.scheduler.recent_deployments_loop_seconds": 0.5,
        // A failed write of events is retried this far apart, max_flush_retries (5) times.
        "server.services.event_persister.flush_interval": 2,
        ...overrides
      }))
    )
    return { proxy, server, directUrl: database.url! } as const
  })

/** The server's warnings about the database being away are expected here: only errors show. */
const quiet = Logger.withMinimumLogLevel(LogLevel.Error)

/** A flow, a run of it (Pending) and a deployment whose schedule the scheduler fills. */
const seed = (name: string) =>
  Effect.gen(function* () {
    const flow = (yield* expectStatus(yield* request("POST", "/flows/", { body: { name } }), 201)).body
    const run = (yield* expectStatus(yield* request("POST", "/flow_runs/", { body: { flow_id: flow.id, state: { type: "PENDING" } } }), 201)).body
    return { flowId: idOf(flow), runId: idOf(run) }
  })

/** Scheduled runs of a new hourly deployment of `flowId`, as the scheduler makes them. */
const scheduledRunsAppear = (flowId: string, name: string) =>
  Effect.gen(function* () {
    const deployment = (yield* expectStatus(
      yield* request("POST", "/deployments/", { body: { name, flow_id: flowId, schedules: [{ schedule: { interval: 3600 } }] } }),
      201
    )).body
    yield* eventually(Effect.gen(function* () {
      const res = yield* request("POST", "/flow_runs/count", { body: { deployments: { id: { any_: [deployment.id] } } } })
      if (res.status !== 200 || !((res.body as number) > 0)) return yield* Effect.fail(new Error(`no scheduled runs yet (${res.status} ${res.text})`))
      return res.body as number
    }))
  })

/** What a client sees on the usual routes while the database is away. */
const requestsWhileAway = (ids: { readonly flowId: string; readonly runId: string }, label: string) =>
  Effect.gen(function* () {
    expectUnavailable(yield* timed(request("GET", `/flows/${ids.flowId}`)), `${label} GET /flows/{id}`)
    expectUnavailable(yield* timed(request("POST", "/flows/filter", { body: {} })), `${label} POST /flows/filter`)
    expectUnavailable(yield* timed(request("POST", "/flows/", { body: { name: `${label}-during` } })), `${label} POST /flows/`)
    expectUnavailable(
      yield* timed(request("POST", `/flow_runs/${ids.runId}/set_state`, { body: { state: { type: "RUNNING" } } })),
      `${label} set_state`
    )
    const ready = yield* timed(request("GET", "/ready"))
    expect(ready.value.status).toBe(503)
    expect(ready.value.body).toEqual({ message: "Database is not available" })
    expect(ready.ms).toBeLessThan(ANSWER_WITHIN_MS)
    // Liveness does not depend on the database.
    expect((yield* request("GET", "/health")).body).toBe(true)
  })

/** The server is back: ready, reads and writes work, a run's transition is accepted. */
const recovered = (ids: { readonly flowId: string; readonly runId: string }) =>
  Effect.gen(function* () {
    yield* eventually(Effect.flatMap(request("GET", "/ready"), (res) => expectStatus(res, 200)))
    yield* expectStatus(yield* request("GET", `/flows/${ids.flowId}`), 200)
    const set = yield* expectStatus(yield* request("POST", `/flow_runs/${ids.runId}/set_state`, { body: { state: { type: "RUNNING" } } }), 201)
    expect(set.body.status).toBe("ACCEPT")
  })

describe.skipIf(!onServer())("the database going away under a running server (PostgreSQL through a proxy)", () => {
  it.live("stopped (connections closed, new ones refused): 503 at once, ready 503, then recovery with services still running", () =>
    Effect.gen(function* () {
      const { proxy, server } = yield* serverThroughProxy()
      yield* Effect.gen(function* () {
        const ids = yield* seed("away-stopped")
        yield* scheduledRunsAppear(ids.flowId, "before")

        yield* Effect.promise(() => proxy.down())
        yield* requestsWhileAway(ids, "stopped")
        // An event taken while the database is away waits in the persister's retries.
        const eventId = crypto.randomUUID()
        const posted = yield* request("POST", "/events", {
          body: [{ id: eventId, occurred: new Date().toISOString(), event: "faults.while-away", resource: { "prefect.resource.id": "faults.test" } }]
        })
        expect(posted.status).toBe(204)
        // Several scheduler iterations fail meanwhile.
        yield* realSleep(2500)
        yield* requestsWhileAway(ids, "stopped, later")

        yield* Effect.promise(() => proxy.restore())
        yield* recovered(ids)
        // The scheduler survived its failed iterations: a new deployment gets its runs.
        yield* scheduledRunsAppear(ids.flowId, "after")
        // The event was written once the database was back.
        yield* eventually(Effect.gen(function* () {
          const found = yield* request("POST", "/events/filter", { body: { filter: { id: { id: [eventId] }, occurred: { since: "2000-01-01T00:00:00Z" } } } })
          if (found.status !== 200 || found.body.events.length !== 1) return yield* Effect.fail(new Error(`event not stored: ${found.text}`))
        }))
      }).pipe(Effect.provide(server), Effect.scoped, quiet)
    }).pipe(Effect.scoped), 90_000)

  it.live("silent (nothing answers, connections stay open): 503 within the bounds, no request hangs, then recovery", () =>
    Effect.gen(function* () {
      const { proxy, server } = yield* serverThroughProxy()
      yield* Effect.gen(function* () {
        const ids = yield* seed("away-silent")
        // Warm the pool: idle connections that will be silent once the proxy stalls.
        yield* Effect.all(Array.from({ length: 8 }, () => request("POST", "/flows/filter", { body: {} })), { concurrency: 8 })

        proxy.stall()
        yield* requestsWhileAway(ids, "silent")
        // More requests at once than the pool has connections: none waits beyond the bounds.
        const burst = yield* Effect.all(
          Array.from({ length: 24 }, (_, i) => timed(request("GET", i % 2 === 0 ? `/flows/${ids.flowId}` : `/flow_runs/${ids.runId}`))),
          { concurrency: 24 }
        )
        burst.forEach((answer, i) => expectUnavailable(answer, `burst ${i}`))

        yield* Effect.promise(() => proxy.restore())
        yield* recovered(ids)
        yield* scheduledRunsAppear(ids.flowId, "after-silence")
      }).pipe(Effect.provide(server), Effect.scoped, quiet)
    }).pipe(Effect.scoped), 90_000)

  it.live("connections terminated by PostgreSQL (57P01): never a 500, and the pool replaces them", () =>
    Effect.gen(function* () {
      const { server, directUrl } = yield* serverThroughProxy({ "server.api.csrf_protection_enabled": false })
      yield* Effect.gen(function* () {
        const ids = yield* seed("terminated")
        const databaseName = new URL(directUrl).pathname.slice(1)
        const admin = new pg.Client({ connectionString: directUrl })
        yield* Effect.promise(() => admin.connect())
        const statuses: Array<number> = []
        for (let round = 0; round < 3; round++) {
          const traffic = Effect.all(
            Array.from({ length: 20 }, (_, i) => Effect.map(request("POST", "/flows/filter", { body: { limit: 5, offset: i } }), (res) => res.status)),
            { concurrency: 10 }
          )
          const terminate = Effect.promise(() =>
            admin.query(
              "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
              [databaseName]
            )
          )
          const [answered] = yield* Effect.all([traffic, terminate], { concurrency: 2 })
          statuses.push(...answered)
        }
        yield* Effect.promise(() => admin.end())
        // A statement on a connection that was terminated under it answers 503; all others 200.
        expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([])
        yield* recovered(ids)
      }).pipe(Effect.provide(server), Effect.scoped, quiet)
    }).pipe(Effect.scoped), 90_000)

  it.live("a middleware's own statement (the CSRF token check) answers 503 too", () =>
    Effect.gen(function* () {
      const { proxy, server } = yield* serverThroughProxy({ "server.api.csrf_protection_enabled": true })
      yield* Effect.gen(function* () {
        const token = (yield* expectStatus(yield* request("GET", "/csrf-token?client=faults"), 200)).body.token as string
        const headers = { "prefect-csrf-token": token, "prefect-csrf-client": "faults" }
        yield* expectStatus(yield* request("POST", "/flows/", { body: { name: "csrf-ok" }, headers }), 201)
        yield* Effect.promise(() => proxy.down())
        expectUnavailable(yield* timed(request("POST", "/flows/", { body: { name: "csrf-away" }, headers })), "csrf POST /flows/")
        yield* Effect.promise(() => proxy.restore())
        yield* eventually(Effect.flatMap(request("POST", "/flows/", { body: { name: "csrf-back" }, headers }), (res) => expectStatus(res, 201)))
      }).pipe(Effect.provide(server), Effect.scoped, quiet)
    }).pipe(Effect.scoped), 90_000)
})
