/**
 * Several processes on one PostgreSQL database, as the multi-replica topologies run them: two full
 * servers; and two API processes (--no-services) with one services process. Events and logs reach
 * the live subscribers of every process, an automation fires once per event whichever process
 * received it, leases made through one process end through another, and a SIGKILL in the middle of
 * a burst loses no event of an accepted transition. PostgreSQL only: on the embedded database one
 * process serves the database.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { onServer, scopedDatabase } from "../support/database.ts"
import { call, ensureBundle, ok, type ServerProcess, scopedEmptyHome, scopedServerProcess } from "../support/server-process.ts"
import type { Json } from "../support/server.ts"
import { connectTo, opened, type TestSocket } from "../support/websocket.ts"
import { until } from "./kill-invariants.ts"

/** `until`, saying what did not come. */
const waitFor = (what: string, check: () => Promise<boolean>, withinMs: number, everyMs = 100) =>
  Effect.promise(() => until(check, withinMs, everyMs).catch((error: Error) => Promise.reject(new Error(`${what}: ${error.message}`))))

const env = { BATON_SERVER_LOGS_STREAM_OUT_ENABLED: "true" }

const subscribed = (server: ServerProcess, path: "/events/out" | "/logs/out", filter: unknown) =>
  Effect.gen(function* () {
    const socket = opened(yield* connectTo(server.api, path))
    socket.send({ type: "auth", token: null })
    expect(yield* Effect.promise(() => socket.next())).toEqual({ type: "auth_success" })
    socket.send({ type: "filter", filter, backfill: false })
    yield* Effect.addFinalizer(() => Effect.sync(() => socket.close()))
    return socket
  })

/** The name of the events, and the message of the logs, that `live` sends. */
const WARM_UP = "replica.warm-up"
const isWarmUp = (message: Json) =>
  (message as { event?: { event?: string } }).event?.event === WARM_UP || (message as { log?: { message?: string } }).log?.message === WARM_UP

/**
 * Sends `warmUp` (an event or a log named WARM_UP) to the subscriber's own server until the socket
 * has it. A subscription is made when the server reads the filter, which the client cannot see:
 * from the first warm-up on, the server follows what every process writes.
 */
const live = (socket: TestSocket, warmUp: () => Promise<unknown>) =>
  Effect.promise(async () => {
    for (let tries = 0; tries < 25; tries++) {
      await warmUp()
      const arrived = await socket.next(400).then(isWarmUp, () => false)
      if (arrived) return
    }
    throw new Error("the subscription never had a warm-up")
  })

/** The next message of `socket` within `ms` (warm-ups passed over), and how long it took. */
const nextTimed = (socket: TestSocket, ms: number) =>
  Effect.promise(async () => {
    const started = Date.now()
    while (true) {
      const message = await socket.next(Math.max(1, ms - (Date.now() - started)))
      if (!isWarmUp(message)) return { message, after: Date.now() - started }
    }
  })

const event = (name: string, resource = "replica.thing") => ({
  id: crypto.randomUUID(),
  occurred: new Date().toISOString(),
  event: name,
  resource: { "prefect.resource.id": resource }
})

/** The stored events with these ids (the API answers at most 50 per page; ids are asked for 50 at a time). */
const storedIds = async (server: ServerProcess, ids: ReadonlyArray<string>) => {
  const found: Array<string> = []
  for (let i = 0; i < ids.length; i += 50) {
    const res = await ok(server, "POST", "/events/filter", {
      filter: { id: { id: ids.slice(i, i + 50) }, occurred: { since: "2020-01-01T00:00:00Z" } },
      limit: 50
    })
    found.push(...(res.events as unknown as Array<{ id: string }>).map((e) => e.id))
  }
  return found
}

const triggeredCount = async (server: ServerProcess, automationId: unknown) => {
  const res = await ok(server, "POST", "/events/filter", {
    filter: {
      event: { name: ["prefect.automation.triggered"] },
      resource: { id: [`prefect.automation.${automationId}`] },
      occurred: { since: "2020-01-01T00:00:00Z" }
    },
    limit: 50
  })
  return res.total as number
}

interface Instance {
  readonly pid: number
  readonly api: boolean
  readonly services: ReadonlyArray<string>
  readonly leads: ReadonlyArray<string>
  readonly lease_storage: string
}

const leaders = async (server: ServerProcess) =>
  ((await ok(server, "GET", "/admin/instances")) as unknown as Array<Instance>).filter((instance) => instance.leads.length > 0)

const reactiveAutomation = (server: ServerProcess, expect: string) =>
  ok(server, "POST", "/automations/", {
    name: `once-${expect}`,
    trigger: { posture: "Reactive", expect: [expect], threshold: 1, within: 0 },
    actions: [{ type: "do-nothing" }]
  }, 201)

describe.skipIf(!onServer())("several processes on one PostgreSQL database", { concurrent: true }, () => {
  it.live("two full servers: events, logs and run events cross processes live, automations fire once per event, leases end anywhere", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const database = yield* scopedDatabase({ migrated: true })
      const [a, b] = yield* Effect.all([
        scopedServerProcess({ home: yield* scopedEmptyHome, databaseUrl: database.url!, env }),
        scopedServerProcess({ home: yield* scopedEmptyHome, databaseUrl: database.url!, env })
      ], { concurrency: 2 })

      // Both are listed, each serving the API and running the services; one leads the singletons.
      yield* waitFor("one leader listed", async () => (await leaders(b)).length === 1, 10_000)
      const listed = (yield* Effect.promise(() => ok(b, "GET", "/admin/instances"))) as unknown as Array<Instance>
      expect(listed.map((instance) => instance.pid).sort()).toEqual([a.pid, b.pid].sort())
      expect(listed.every((instance) => instance.api && instance.services.includes("scheduler") && instance.lease_storage === "database")).toBe(true)
      const leads = (yield* Effect.promise(() => leaders(a)))[0]!.leads
      expect(leads).toEqual(expect.arrayContaining(["cancellation_cleanup", "foreman", "late_runs", "pause_expirations", "repossessor", "scheduler"]))
      expect(leads).toContain("triggers")

      // An event sent to A reaches a subscriber of B within a second.
      const eventsOnB = yield* subscribed(b, "/events/out", { event: { prefix: ["replica.", "prefect.flow-run."] } })
      yield* live(eventsOnB, () => ok(b, "POST", "/events", [event(WARM_UP)], 204))
      const sent = event("replica.hello")
      yield* Effect.promise(() => ok(a, "POST", "/events", [sent], 204))
      const heard = yield* nextTimed(eventsOnB, 5000)
      expect(heard.message).toMatchObject({ type: "event", event: { id: sent.id, event: "replica.hello" } })
      expect(heard.after).toBeLessThan(1000)

      // A run's state changes made through A reach B's subscriber.
      const flow = yield* Effect.promise(() => ok(a, "POST", "/flows/", { name: "replicas" }, 201))
      const run = yield* Effect.promise(() => ok(a, "POST", "/flow_runs/", { flow_id: flow.id }, 201))
      const pending = yield* nextTimed(eventsOnB, 5000)
      expect(pending.message).toMatchObject({ event: { id: run.state.id, event: "prefect.flow-run.Pending" } })
      expect(pending.after).toBeLessThan(1000)

      // A log sent to A reaches a subscriber of B.
      const logsOnB = yield* subscribed(b, "/logs/out", { flow_run_id: { any_: [run.id] } })
      yield* live(logsOnB, () =>
        ok(b, "POST", "/logs/", [{ name: "replica", level: 20, message: WARM_UP, timestamp: new Date().toISOString(), flow_run_id: run.id }], 201)
      )
      yield* Effect.promise(() =>
        ok(a, "POST", "/logs/", [{ name: "replica", level: 20, message: "from A", timestamp: new Date().toISOString(), flow_run_id: run.id }], 201)
      )
      const log = yield* nextTimed(logsOnB, 5000)
      expect(log.message).toMatchObject({ type: "log", log: { message: "from A", flow_run_id: run.id } })
      expect(log.after).toBeLessThan(1000)

      // Each event fires the automation once, whichever server received it: 20 events, 20 firings.
      const automation = yield* Effect.promise(() => reactiveAutomation(a, "replica.ping"))
      // Both servers' triggers services load the new automation (A at once, B through NOTIFY).
      yield* Effect.sleep("1 second")
      const pings = Array.from({ length: 20 }, () => event("replica.ping"))
      yield* Effect.promise(() => Promise.all(pings.map((ping, i) => ok(i % 2 === 0 ? a : b, "POST", "/events", [ping], 204))))
      yield* waitFor("20 firings", async () => (await triggeredCount(a, automation.id)) >= 20, 20_000)
      yield* Effect.sleep("2 seconds")
      expect(yield* Effect.promise(() => triggeredCount(b, automation.id))).toBe(20)

      // A task worker on B gets the background task run created through A, at once.
      const taskWorker = opened(yield* connectTo(b.api, "/task_runs/subscriptions/scheduled"))
      yield* Effect.addFinalizer(() => Effect.sync(() => taskWorker.close()))
      taskWorker.send({ type: "auth", token: null })
      expect(yield* Effect.promise(() => taskWorker.next())).toEqual({ type: "auth_success" })
      taskWorker.send({ type: "subscribe", keys: ["replicated-task"], client_id: "worker-on-b" })
      yield* Effect.sleep("200 millis")
      const delayed = yield* Effect.promise(() =>
        ok(a, "POST", "/task_runs/", { task_key: "replicated-task", dynamic_key: "0", state: { type: "SCHEDULED", state_details: { deferred: true } } }, 201)
      )
      const delivered = yield* nextTimed(taskWorker, 5000)
      expect(delivered.message).toMatchObject({ id: delayed.id, task_key: "replicated-task" })
      expect(delivered.after).toBeLessThan(1000)
      taskWorker.send({ type: "ack" })

      // A lease taken through A renews and ends through B, which gives its slots back.
      const limit = yield* Effect.promise(() => ok(a, "POST", "/v2/concurrency_limits/", { name: "replicated", limit: 3 }, 201))
      const lease = yield* Effect.promise(() =>
        ok(a, "POST", "/v2/concurrency_limits/increment-with-lease", { names: ["replicated"], slots: 2, lease_duration: 60 })
      )
      expect((yield* Effect.promise(() => call(b, "POST", `/v2/concurrency_limits/leases/${lease.lease_id}/renew`, { lease_duration: 120 }))).status).toBe(204)
      yield* Effect.promise(() => ok(b, "POST", "/v2/concurrency_limits/decrement-with-lease", { lease_id: lease.lease_id }, 204))
      expect((yield* Effect.promise(() => ok(a, "GET", `/v2/concurrency_limits/${limit.id}`))).active_slots).toBe(0)
    }).pipe(Effect.scoped), 120_000)

  it.live("two API processes and a services process: what either API process receives is stored and acted on; a SIGKILL mid-burst loses no event", () =>
    Effect.gen(function* () {
      yield* Effect.promise(ensureBundle)
      const database = yield* scopedDatabase({ migrated: true })
      const [one, two, services] = yield* Effect.all([
        scopedServerProcess({ home: yield* scopedEmptyHome, databaseUrl: database.url!, env, command: ["server", "start", "--no-services"] }),
        scopedServerProcess({ home: yield* scopedEmptyHome, databaseUrl: database.url!, env, command: ["server", "start", "--no-services"] }),
        scopedServerProcess({ home: yield* scopedEmptyHome, databaseUrl: database.url!, env, command: ["server", "services", "start"] })
      ], { concurrency: 3 })
      expect(services.exited()).toBe(false)
      // The services process leads; the API processes run only their persisters and lead nothing.
      yield* waitFor("the services process listed as leader", async () => (await leaders(one)).length === 1, 10_000)
      const listed = (yield* Effect.promise(() => ok(one, "GET", "/admin/instances"))) as unknown as Array<Instance>
      expect(listed).toHaveLength(3)
      expect(listed.find((instance) => !instance.api)).toMatchObject({ pid: services.pid, leads: expect.arrayContaining(["scheduler"]) })
      expect(listed.filter((instance) => instance.api).map((instance) => [instance.services, instance.leads])).toEqual([
        [["event_persister"], []],
        [["event_persister"], []]
      ])
      // A process keeping leases in memory, started beside them, says so.
      const stray = yield* scopedServerProcess({
        home: yield* scopedEmptyHome,
        databaseUrl: database.url!,
        env: { BATON_SERVER_CONCURRENCY_LEASE_STORAGE: "memory" },
        command: ["server", "start", "--no-services"]
      })
      const warning = "Concurrency leases are kept in process memory (server.concurrency.lease_storage=memory) by this process"
      yield* waitFor("the in-memory leases warning", async () => stray.output().includes(warning), 10_000, 50)
      yield* Effect.promise(() => stray.kill("SIGTERM"))

      // Received by an API-only process: a subscriber of the other one has it within a second, it
      // is stored within the flush interval, and the services process's triggers act on it.
      const automation = yield* Effect.promise(() => reactiveAutomation(one, "replica.api-only"))
      const eventsOnOne = yield* subscribed(one, "/events/out", { event: { prefix: ["replica."] } })
      const logsOnOne = yield* subscribed(one, "/logs/out", {})
      yield* Effect.sleep("1 second")
      const sent = event("replica.api-only")
      yield* Effect.promise(() => ok(two, "POST", "/events", [sent], 204))
      const heard = yield* nextTimed(eventsOnOne, 5000)
      expect(heard.message).toMatchObject({ event: { id: sent.id } })
      expect(heard.after).toBeLessThan(1000)
      yield* Effect.promise(() => ok(two, "POST", "/logs/", [{ name: "replica", level: 20, message: "from two", timestamp: new Date().toISOString() }], 201))
      const log = yield* nextTimed(logsOnOne, 5000)
      expect(log.message).toMatchObject({ type: "log", log: { message: "from two" } })
      expect(log.after).toBeLessThan(1000)
      yield* waitFor("the event stored", async () => (await storedIds(one, [sent.id])).length === 1, 10_000)
      yield* waitFor("the automation fired", async () => (await triggeredCount(one, automation.id)) === 1, 10_000)

      // A burst of runs created through `one`, killed with SIGKILL in the middle of it: every run
      // whose creation was answered has its Pending event (the event's id is the state's).
      const flow = yield* Effect.promise(() => ok(two, "POST", "/flows/", { name: "burst" }, 201))
      const accepted: Array<string> = []
      const burst = Effect.promise(async () => {
        const started = Date.now()
        while (Date.now() - started < 5000) {
          const answers = await Promise.allSettled(
            Array.from({ length: 10 }, () => call(one, "POST", "/flow_runs/", { flow_id: flow.id }))
          )
          for (const answer of answers) {
            if (answer.status === "fulfilled" && answer.value.status === 201) accepted.push(String(answer.value.body.state.id))
          }
          if (answers.some((answer) => answer.status === "rejected")) return
        }
      })
      yield* Effect.all([burst, Effect.delay(Effect.promise(() => one.kill("SIGKILL")), "700 millis")], { concurrency: 2 })
      expect(accepted.length).toBeGreaterThan(0)
      // Notes the killed process left in the outbox are relayed by another process's next look.
      yield* waitFor("every accepted transition's event", async () => (await storedIds(two, accepted)).length === accepted.length, 20_000, 250)
      const stored = yield* Effect.promise(() => storedIds(two, accepted))
      expect(new Set(stored).size).toBe(accepted.length)
    }).pipe(Effect.scoped), 120_000)
})
