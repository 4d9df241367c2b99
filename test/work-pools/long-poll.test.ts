import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Exit, Fiber, Layer, Option, Redacted, Scope, TestClock, TestServices } from "effect"
import pg from "pg"
import { DeploymentScheduler } from "../../src/deployments/scheduler.ts"
import { Transitions } from "../../src/orchestration/transitions.ts"
import { ApiLive, AreasLive, HttpServerLive } from "../../src/server.ts"
import { layer as settingsLayer } from "../../src/settings/settings.ts"
import { RUNS_DUE_CHANNEL, RunsDue } from "../../src/work-pools/runs-due.ts"
import { idOf, makeDeployment, makeFlow, ok } from "../support/api.ts"
import { eventually } from "../support/eventually.ts"
import { withDatabase } from "../support/global-setup.ts"
import { apiUrl, request, testServer } from "../support/server.ts"

const onServer = !!process.env.TEST_DATABASE_URL

const realSleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

/** `effect` within `ms` of real time (the test clock does not move on its own). */
const within = <A, E, R>(effect: Effect.Effect<A, E, R>, ms = 5000) =>
  TestServices.provideLive(Effect.timeoutFail(effect, { duration: Duration.millis(ms), onTimeout: () => new Error(`not done within ${ms} ms`) }))

const makePool = (name: string, queues: ReadonlyArray<string> = []) =>
  Effect.gen(function* () {
    ok(yield* request("POST", "/work_pools/", { body: { name, type: "process" } }), 201)
    for (const queue of queues) ok(yield* request("POST", `/work_pools/${name}/queues`, { body: { name: queue } }), 201)
    return yield* makeFlow(`${name}-flow`)
  })

const createRun = (flowId: string, pool: string, queue: string, state: Record<string, unknown> | undefined, name?: string) =>
  Effect.map(
    request("POST", "/flow_runs/", {
      body: { flow_id: flowId, work_pool_name: pool, work_queue_name: queue, ...(name ? { name } : {}), ...(state ? { state } : {}) }
    }),
    (res) => ok(res, 201)
  )

const scheduledAt = (at: number) => ({ type: "SCHEDULED", state_details: { scheduled_time: new Date(at).toISOString() } })

const queueOf = (pool: string, queue: string) => Effect.map(request("GET", `/work_pools/${pool}/queues/${queue}`), (res) => ok(res, 200))

/** A poll sent now and left running; its fiber answers the status and body. */
const heldPoll = (pool: string, body: Record<string, unknown>) =>
  Effect.fork(Effect.map(request("POST", `/work_pools/${pool}/get_scheduled_flow_runs`, { body }), (res) => ({ status: res.status, body: res.body })))

/** Passes once the poll of `pool/queue` made its first poll and watches the queue. */
const isHeld = (pool: string, queue: string, watchers = 1) =>
  eventually(Effect.gen(function* () {
    const found = yield* queueOf(pool, queue)
    const watching = yield* Effect.flatMap(RunsDue, (due) => due.watching)
    if (found.last_polled === null || (watching.get(idOf(found)) ?? 0) < watchers) return yield* Effect.fail("not held yet")
    return idOf(found)
  }))

/** The poll is still waiting a moment of real time later. */
const stillHeld = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  Effect.gen(function* () {
    yield* realSleep(300)
    expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
  })

/**
 * A plain client listening on the runs-due channel of the test server's database (another process,
 * as far as the server can tell), for the scope; what it hears, parsed, as it comes.
 */
const runsDueListener = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const database = (yield* sql<{ name: string }>`SELECT current_database() AS name`)[0]!.name
  const listener = new pg.Client({ connectionString: withDatabase(process.env.TEST_DATABASE_URL!, database) })
  yield* Effect.acquireRelease(Effect.promise(() => listener.connect()), () => Effect.promise(() => listener.end()))
  const heard: Array<{ readonly from?: string; readonly due?: Record<string, unknown>; readonly listening?: boolean }> = []
  listener.on("notification", (message) => void heard.push(JSON.parse(message.payload ?? "{}")))
  yield* Effect.promise(() => listener.query(`LISTEN ${RUNS_DUE_CHANNEL}`))
  /** Says on the channel that this listener listens, as a process does. */
  const sayListening = (from: string) =>
    Effect.promise(() => listener.query("SELECT pg_notify($1, $2)", [RUNS_DUE_CHANNEL, JSON.stringify({ from, listening: true })]))
  return { heard, sayListening }
})

describe("held worker polls (wait_seconds)", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("wait_seconds outside 0..60, or not a number, is 422 in the usual detail shape", () =>
      Effect.gen(function* () {
        yield* makePool("lp-bounds")
        const over = yield* request("POST", "/work_pools/lp-bounds/get_scheduled_flow_runs", { body: { wait_seconds: 61 } })
        expect(over.status).toBe(422)
        expect(over.body.detail).toEqual([
          { loc: ["body", "wait_seconds"], msg: "Input should be less than or equal to 60", type: "less_than_equal", input: 61, ctx: { le: 60 } }
        ])
        const under = yield* request("POST", "/work_pools/lp-bounds/get_scheduled_flow_runs", { body: { wait_seconds: -1 } })
        expect(under.status).toBe(422)
        expect(under.body.detail[0]).toMatchObject({ loc: ["body", "wait_seconds"], type: "greater_than_equal", ctx: { ge: 0 } })
        const text = yield* request("POST", "/work_pools/lp-bounds/get_scheduled_flow_runs", { body: { wait_seconds: "soon" } })
        expect(text.status).toBe(422)
      }))

    it.effect("wait_seconds 0 is today's poll: it answers at once, the runs a poll without it answers", () =>
      Effect.gen(function* () {
        const flowId = yield* makePool("lp-zero")
        const empty = yield* within(Effect.flatMap(heldPoll("lp-zero", { wait_seconds: 0 }), Fiber.join))
        expect(empty).toEqual({ status: 200, body: [] })
        const clock = yield* TestClock.currentTimeMillis
        yield* createRun(flowId, "lp-zero", "default", scheduledAt(clock - 1000), "due")
        const plain = ok(yield* request("POST", "/work_pools/lp-zero/get_scheduled_flow_runs", { body: {} }), 200)
        const zero = ok(yield* request("POST", "/work_pools/lp-zero/get_scheduled_flow_runs", { body: { wait_seconds: 0 } }), 200)
        expect(zero.map((r) => r.flow_run.id)).toEqual(plain.map((r) => r.flow_run.id))
        expect(zero.map((r) => r.flow_run.name)).toEqual(["due"])
      }))

    it.effect("a held poll that finds runs answers at once", () =>
      Effect.gen(function* () {
        const flowId = yield* makePool("lp-found")
        const clock = yield* TestClock.currentTimeMillis
        yield* createRun(flowId, "lp-found", "default", scheduledAt(clock - 1000), "due")
        const found = yield* within(Effect.flatMap(heldPoll("lp-found", { wait_seconds: 30 }), Fiber.join))
        expect(found.body.map((r) => r.flow_run.name)).toEqual(["due"])
      }))

    it.effect("answers as soon as a run is created Scheduled in its pool, with a normal poll's answer and side effects", () =>
      Effect.gen(function* () {
        const flowId = yield* makePool("lp-create", ["fast"])
        const clock = yield* TestClock.currentTimeMillis
        const poll = yield* heldPoll("lp-create", { wait_seconds: 60, scheduled_before: new Date(clock + 10_000).toISOString() })
        const queueId = yield* isHeld("lp-create", "default")
        yield* stillHeld(poll)
        yield* TestClock.adjust(Duration.seconds(5))
        const run = yield* createRun(flowId, "lp-create", "default", scheduledAt(clock + 5_000), "created")
        const answer = yield* within(Fiber.join(poll))
        expect(answer.status).toBe(200)
        expect(answer.body).toHaveLength(1)
        expect(answer.body[0]).toMatchObject({ work_queue_id: queueId, flow_run: { id: run.id, state_type: "SCHEDULED", name: "created" } })
        expect(answer.body[0].flow_run).not.toHaveProperty("work_pool_name")
        // The woken poll counted as a poll when it woke.
        expect(Date.parse((yield* queueOf("lp-create", "default")).last_polled as string)).toBe(clock + 5_000)
        expect((yield* queueOf("lp-create", "default")).status).toBe("READY")
        // Its watch is gone.
        expect((yield* Effect.flatMap(RunsDue, (due) => due.watching)).get(queueId)).toBeUndefined()
      }))

    it.effect("answers with a run a deployment creates, woken once the run is committed (repeated 10 times)", () =>
      Effect.gen(function* () {
        const flowId = yield* makePool("lp-deployment")
        const deployment = ok(yield* request("POST", "/deployments/", { body: { name: "lp", flow_id: flowId, work_pool_name: "lp-deployment" } }), 201)
        for (let round = 0; round < 10; round++) {
          const poll = yield* heldPoll("lp-deployment", { wait_seconds: 60 })
          yield* isHeld("lp-deployment", "default")
          const run = ok(yield* request("POST", `/deployments/${deployment.id}/create_flow_run`, { body: {} }), 201)
          // Woken before the commit, the poll would read no run and wait out its minute.
          const answer = yield* within(Fiber.join(poll))
          expect(answer.body.map((entry) => entry.flow_run.id)).toEqual([run.id])
          ok(yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "CANCELLED" }, force: true } }), 201)
        }
      }))

    it.effect("answers as soon as a run in its queues moves to Scheduled", () =>
      Effect.gen(function* () {
        const flowId = yield* makePool("lp-transition", ["named"])
        const run = yield* createRun(flowId, "lp-transition", "named", undefined)
        expect(run.state.type).toBe("PENDING")
        const poll = yield* heldPoll("lp-transition", { wait_seconds: 60, work_queue_names: ["named"] })
        yield* isHeld("lp-transition", "named")
        yield* stillHeld(poll)
        const moved = yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "SCHEDULED" }, force: true } })
        expect(moved.body.status).toBe("ACCEPT")
        const answer = yield* within(Fiber.join(poll))
        expect(answer.body.map((r) => r.flow_run.id)).toEqual([run.id])
      }))

    it.effect("answers when a future run comes due, on the clock", () =>
      Effect.gen(function* () {
        const flowId = yield* makePool("lp-future")
        const clock = yield* TestClock.currentTimeMillis
        // Due 30 s from now; the worker looks 5 s ahead.
        const later = yield* createRun(flowId, "lp-future", "default", scheduledAt(clock + 30_000), "later")
        const poll = yield* heldPoll("lp-future", { wait_seconds: 60, scheduled_before: new Date(clock + 5_000).toISOString() })
        yield* isHeld("lp-future", "default")
        yield* TestClock.adjust(Duration.seconds(24))
        yield* stillHeld(poll)
        yield* TestClock.adjust(Duration.seconds(1))
        const answer = yield* within(Fiber.join(poll))
        expect(answer.body.map((r) => r.flow_run.id)).toEqual([later.id])

        // A future run created while the poll is held: the poll waits for it, not for the end.
        const second = yield* heldPoll("lp-future", { wait_seconds: 60, scheduled_before: new Date(clock + 30_000).toISOString(), scheduled_after: new Date(clock + 31_000).toISOString() })
        yield* eventually(Effect.flatMap(RunsDue, (due) => Effect.flatMap(due.watching, (w) => ([...w.values()].some((n) => n > 0) ? Effect.void : Effect.fail("not held")))))
        yield* realSleep(200)
        const soon = yield* createRun(flowId, "lp-future", "default", scheduledAt(clock + 25_000 + 20_000), "soon")
        yield* TestClock.adjust(Duration.seconds(10))
        yield* stillHeld(second)
        yield* TestClock.adjust(Duration.seconds(10))
        const next = yield* within(Fiber.join(second))
        expect(next.body.map((r) => r.flow_run.id)).toEqual([soon.id])
      }))

    it.effect("answers [] when the wait ends, not before", () =>
      Effect.gen(function* () {
        yield* makePool("lp-empty")
        const poll = yield* heldPoll("lp-empty", { wait_seconds: 10 })
        yield* isHeld("lp-empty", "default")
        yield* TestClock.adjust(Duration.seconds(9))
        yield* stillHeld(poll)
        yield* TestClock.adjust(Duration.seconds(1))
        expect(yield* within(Fiber.join(poll))).toEqual({ status: 200, body: [] })
      }))

    it.effect("does not wake for another pool's run, nor for a run beyond its window", () =>
      Effect.gen(function* () {
        yield* makePool("lp-mine")
        const otherFlow = yield* makePool("lp-other")
        const clock = yield* TestClock.currentTimeMillis
        const poll = yield* heldPoll("lp-mine", { wait_seconds: 20, scheduled_before: new Date(clock).toISOString() })
        yield* isHeld("lp-mine", "default")
        yield* createRun(otherFlow, "lp-other", "default", scheduledAt(clock - 1000))
        yield* stillHeld(poll)
        const mine = idOf(yield* queueOf("lp-mine", "default"))
        expect((yield* Effect.flatMap(RunsDue, (due) => due.watching)).get(mine)).toBe(1)
        yield* TestClock.adjust(Duration.seconds(20))
        expect(yield* within(Fiber.join(poll))).toEqual({ status: 200, body: [] })
      }))

    it.effect("wakes for the scheduler's batch of new runs", () =>
      Effect.gen(function* () {
        const flowId = yield* makePool("lp-scheduler")
        const clock = yield* TestClock.currentTimeMillis
        const poll = yield* heldPoll("lp-scheduler", { wait_seconds: 60, scheduled_before: new Date(clock + 3_600_000).toISOString() })
        yield* isHeld("lp-scheduler", "default")
        const dep = yield* makeDeployment({ name: "lp", flow_id: flowId, work_pool_name: "lp-scheduler", schedules: [{ schedule: { interval: 600 } }] })
        yield* Effect.flatMap(DeploymentScheduler, (s) => s.schedule([dep.id], {}))
        const answer = yield* within(Fiber.join(poll))
        expect(answer.body.length).toBeGreaterThan(0)
        expect(answer.body.every((r) => r.flow_run.deployment_id === dep.id)).toBe(true)
      }))

    it.effect("hundreds of held polls hold no database connection, and all wake for one run", () =>
      Effect.gen(function* () {
        const flowId = yield* makePool("lp-many")
        const queueId = idOf(yield* queueOf("lp-many", "default"))
        const polls = yield* Effect.forEach(Array.from({ length: 200 }), () => heldPoll("lp-many", { wait_seconds: 60 }))
        yield* eventually(Effect.flatMap(RunsDue, (due) =>
          Effect.flatMap(due.watching, (w) => ((w.get(queueId) ?? 0) === 200 ? Effect.void : Effect.fail("not all held")))))
        // The embedded test database has a single connection: any request still gets it, long before
        // a held poll would give it back (60 s); the bound leaves room for a loaded machine.
        expect((yield* within(request("GET", "/work_pools/lp-many"), 10_000)).status).toBe(200)
        const run = yield* createRun(flowId, "lp-many", "default", scheduledAt(yield* TestClock.currentTimeMillis))
        const answers = yield* within(Effect.forEach(polls, Fiber.join), 30_000)
        expect(answers.every((a) => a.status === 200 && a.body.length === 1 && a.body[0].flow_run.id === run.id)).toBe(true)
      }))

    it.effect("ends when the client goes away", () =>
      Effect.gen(function* () {
        yield* makePool("lp-abort")
        const url = yield* apiUrl
        const abort = new AbortController()
        const sent = fetch(`${url}/work_pools/lp-abort/get_scheduled_flow_runs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ wait_seconds: 60 }),
          signal: abort.signal
        }).catch(() => "aborted")
        const queueId = yield* isHeld("lp-abort", "default")
        abort.abort()
        expect(yield* Effect.promise(() => sent)).toBe("aborted")
        yield* eventually(Effect.flatMap(RunsDue, (due) =>
          Effect.flatMap(due.watching, (w) => (w.has(queueId) ? Effect.fail("still watching") : Effect.void))))
      }))

    it.effect("ends, answering [], when the server stops", () =>
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(testServer(), scope)
        const inServer = <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<ReturnType<typeof testServer>>>) => Effect.provide(effect, context)
        yield* inServer(makePool("lp-stop"))
        const poll = yield* inServer(heldPoll("lp-stop", { wait_seconds: 60 }))
        yield* inServer(isHeld("lp-stop", "default"))
        yield* within(Scope.close(scope, Exit.void), 10_000)
        expect(yield* within(Fiber.join(poll))).toEqual({ status: 200, body: [] })
      }))

    // Replicas share a PostgreSQL server; the embedded database serves one process.
    it.effect.skipIf(!onServer)("is woken by a run another server process creates, through NOTIFY", () =>
      Effect.scoped(Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const database = (yield* sql<{ name: string }>`SELECT current_database() AS name`)[0]!.name
        const url = withDatabase(process.env.TEST_DATABASE_URL!, database)
        const flowId = yield* makePool("lp-replicas")
        const queueId = idOf(yield* queueOf("lp-replicas", "default"))

        // This server's listener is up once a NOTIFY from elsewhere reaches a watch.
        const due = yield* RunsDue
        const watch = yield* due.watch([queueId])
        yield* eventually(Effect.gen(function* () {
          yield* sql`SELECT pg_notify(${RUNS_DUE_CHANNEL}, ${JSON.stringify({ from: "probe", due: { [queueId]: null } })})`
          yield* within(watch.next, 200)
        }))

        // Another server on the same database: its own pool of connections, services and HTTP server.
        const other = yield* Layer.build(
          ApiLive.pipe(
            Layer.provideMerge(HttpServerLive),
            Layer.provideMerge(AreasLive),
            Layer.provideMerge(Transitions.Default),
            Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), maxConnections: 4 }).pipe(Layer.orDie)),
            Layer.provideMerge(settingsLayer({ "server.api.host": "127.0.0.1", "server.api.port": 0 }))
          )
        )
        const clock = yield* TestClock.currentTimeMillis
        const poll = yield* heldPoll("lp-replicas", { wait_seconds: 60, scheduled_before: new Date(clock).toISOString() })
        yield* isHeld("lp-replicas", "default", 2)
        yield* stillHeld(poll)
        const run = yield* Effect.provide(createRun(flowId, "lp-replicas", "default", scheduledAt(clock - 1000), "elsewhere"), other)
        const answer = yield* within(Fiber.join(poll))
        expect(answer.body.map((r) => r.flow_run.id)).toEqual([run.id])
      })))

    it.effect.skipIf(!onServer)("announces a scheduler batch with one NOTIFY per queue", () =>
      Effect.scoped(Effect.gen(function* () {
        const listener = yield* runsDueListener
        // A process that listens says so (a server sends its announcements only while one does).
        yield* listener.sayListening("lp-batch-listener")
        const flowId = yield* makePool("lp-batch")
        const queueId = idOf(yield* queueOf("lp-batch", "default"))
        yield* realSleep(200)
        listener.heard.length = 0
        const dep = yield* makeDeployment({ name: "lp-batch", flow_id: flowId, work_pool_name: "lp-batch", schedules: [{ schedule: { interval: 60 } }] })
        const inserted = yield* Effect.flatMap(DeploymentScheduler, (s) => s.schedule([dep.id], {}))
        expect(inserted).toBeGreaterThan(10)
        const due = () => listener.heard.flatMap((payload) => (payload.due ? [payload.due] : []))
        yield* eventually(Effect.sync(() => expect(due().length).toBeGreaterThan(0)))
        yield* realSleep(300)
        expect(due().filter((d) => queueId in d)).toHaveLength(1)
      })))
  })
})

describe("runs-due announcements between processes", () => {
  // Heartbeats every second: a process that has heard no other for three stops announcing.
  // A server of its own (see testServer: a second `it.layer` in a file would be the first server).
  layer(testServer({ overrides: { "server.services.triggers.pg_notify_heartbeat_interval_seconds": 1 } }), { timeout: 60_000 })((it) => {
    it.effect.skipIf(!onServer)("go out only while another process listens, and again as soon as one says it does", () =>
      Effect.scoped(Effect.gen(function* () {
        const listener = yield* runsDueListener
        const due = () => listener.heard.flatMap((payload) => (payload.due ? [payload.due] : []))
        const present = () => listener.heard.flatMap((payload) => (payload.listening === true && payload.from ? [payload.from] : []))
        const flowId = yield* makePool("lp-alone")
        const queueId = idOf(yield* queueOf("lp-alone", "default"))
        // The server says it listens, every heartbeat.
        yield* eventually(Effect.sync(() => expect(present().length).toBeGreaterThan(0)))
        // Past its first three heartbeats, with no other process heard: nothing announced.
        yield* realSleep(3500)
        yield* createRun(flowId, "lp-alone", "default", scheduledAt(Date.now() - 1000))
        yield* realSleep(500)
        expect(due().filter((d) => queueId in d)).toEqual([])
        // Another process says it listens: it is told at once that the server does, and hears the next run.
        const heardBefore = present().length
        yield* listener.sayListening("lp-alone-listener")
        yield* within(eventually(Effect.sync(() => expect(present().filter((from) => from !== "lp-alone-listener").length).toBeGreaterThan(heardBefore))), 900)
        yield* createRun(flowId, "lp-alone", "default", scheduledAt(Date.now() - 1000))
        yield* eventually(Effect.sync(() => expect(due().filter((d) => queueId in d)).toHaveLength(1)))
      })))
  })
})
