import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TaskRunDeliveries } from "../../src/task-workers/deliveries.ts"
import { idOf, ok } from "../support/api.ts"
import { eventually } from "../support/eventually.ts"
import { request, testServer } from "../support/server.ts"
import { connect, opened, type TestSocket } from "../support/websocket.ts"

const SUBSCRIPTION = "/task_runs/subscriptions/scheduled"

/** A background task run (`task.delay()`): no flow run, a deferred Scheduled state. */
const delayed = (taskKey: string, dynamicKey: string) =>
  Effect.map(
    request("POST", "/task_runs/", {
      body: { task_key: taskKey, dynamic_key: dynamicKey, state: { type: "SCHEDULED", state_details: { deferred: true } } }
    }),
    (res) => idOf(ok(res, 201))
  )

/** A task worker's socket, authenticated, optionally subscribed. */
const worker = (subscribe?: Record<string, unknown>) =>
  Effect.gen(function* () {
    const socket = opened(yield* connect(SUBSCRIPTION))
    socket.send({ type: "auth", token: null })
    expect(yield* Effect.promise(() => socket.next())).toEqual({ type: "auth_success" })
    if (subscribe !== undefined) socket.send({ type: "subscribe", ...subscribe })
    yield* Effect.addFinalizer(() => Effect.sync(() => socket.close()))
    return socket
  })

const receive = (socket: TestSocket, ms = 5000) => Effect.promise(() => socket.next(ms)) as Effect.Effect<any>
const closedWith = (socket: TestSocket) => Effect.promise(() => socket.closed)

const workersFor = (keys?: Array<string>) =>
  Effect.map(request("POST", "/task_workers/filter", { body: keys === undefined ? {} : { task_worker_filter: { task_keys: keys } } }), (res) =>
    ok(res, 200) as unknown as Array<{ identifier: string; task_keys: Array<string> }>)

describe("the task-run subscription websocket", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.scoped("delivers each background task run of the subscribed keys, the next once the worker acknowledges", () =>
      Effect.gen(function* () {
        const first = yield* delayed("add", "0")
        const second = yield* delayed("add", "1")
        yield* delayed("other", "0")
        const socket = yield* worker({ keys: ["add"], client_id: "worker-1" })
        const run = yield* receive(socket)
        expect(run).toMatchObject({ id: first, task_key: "add", state: { type: "SCHEDULED", state_details: { deferred: true } } })
        socket.send({ type: "ack" })
        expect((yield* receive(socket)).id).toBe(second)
        socket.send({ type: "ack" })
        // Created while subscribed: delivered as it comes.
        const third = yield* delayed("add", "2")
        expect((yield* receive(socket)).id).toBe(third)
        socket.send({ type: "quit" })
        expect((yield* closedWith(socket)).code).toBe(1000)
      })
    )

    it.scoped("two workers on one key share its runs, each run to one of them", () =>
      Effect.gen(function* () {
        const ids = new Set<string>()
        for (let i = 0; i < 10; i++) ids.add(yield* delayed("shared", String(i)))
        const [a, b] = [yield* worker({ keys: ["shared"], client_id: "a" }), yield* worker({ keys: ["shared"], client_id: "b" })]
        const got: Array<string> = []
        // Each takes until the ten came, then listens a little longer for a repeat.
        const take = (socket: TestSocket) =>
          Effect.promise(async () => {
            const deadline = Date.now() + 10_000
            while (true) {
              const run = await socket.next(300).catch(() => undefined)
              if (run === undefined) {
                if (got.length >= 10 || Date.now() > deadline) return
                continue
              }
              got.push((run as unknown as { id: string }).id)
              socket.send({ type: "ack" })
            }
          })
        yield* Effect.all([take(a), take(b)], { concurrency: 2 })
        expect(got.sort()).toEqual([...ids].sort())
      })
    )

    it.scoped("a run sent but not acknowledged before the socket drops goes to the retry queue, served first", () =>
      Effect.gen(function* () {
        const dropped = yield* delayed("drop", "0")
        const later = yield* delayed("drop", "1")
        const first = yield* worker({ keys: ["drop"], client_id: "dropper" })
        expect((yield* receive(first)).id).toBe(dropped)
        first.close()
        yield* closedWith(first)
        // The server gives the run back before it forgets the worker: once it is no longer listed.
        yield* eventually(Effect.map(workersFor(["drop"]), (workers) => expect(workers).toEqual([])))
        const second = yield* worker({ keys: ["drop"], client_id: "catcher" })
        expect((yield* receive(second)).id).toBe(dropped)
        second.send({ type: "ack" })
        expect((yield* receive(second)).id).toBe(later)
        second.send({ type: "ack" })
      })
    )

    it.scoped("closes on each protocol violation with 4001 and the reason", () =>
      Effect.gen(function* () {
        const cases: Array<[Record<string, unknown>, string]> = [
          [{ type: "hello" }, "Protocol violation: expected 'subscribe' message"],
          [{ type: "subscribe", keys: [], client_id: "c" }, "Protocol violation: expected 'keys' in subscribe message"],
          [{ type: "subscribe", keys: ["k"] }, "Protocol violation: expected 'client_id' in subscribe message"]
        ]
        for (const [message, reason] of cases) {
          const socket = yield* worker()
          socket.send(message)
          expect(yield* closedWith(socket)).toEqual({ code: 4001, reason })
        }
        const run = yield* delayed("violated", "0")
        const socket = yield* worker({ keys: ["violated"], client_id: "v" })
        expect((yield* receive(socket)).id).toBe(run)
        socket.send({ type: "nack" })
        expect(yield* closedWith(socket)).toEqual({ code: 4001, reason: "Protocol violation: expected 'ack' message" })
        // Not acknowledged: the next worker gets it.
        const next = yield* worker({ keys: ["violated"], client_id: "w" })
        expect((yield* receive(next)).id).toBe(run)
        next.send({ type: "ack" })
      })
    )

    it.scoped("task_workers/filter lists the workers while they are connected, by task key, and not after", () =>
      Effect.gen(function* () {
        const socket = yield* worker({ keys: ["listed", "also"], client_id: "lister" })
        // Listed once the subscription is taken (the socket then waits for runs).
        yield* eventually(Effect.map(workersFor(["listed"]), (workers) =>
          expect(workers).toMatchObject([{ identifier: "lister", task_keys: ["also", "listed"] }])))
        expect(yield* workersFor(["nobody"])).toEqual([])
        expect((yield* workersFor()).map((w) => w.identifier)).toContain("lister")
        socket.close()
        yield* closedWith(socket)
        yield* eventually(Effect.map(workersFor(["listed"]), (workers) => expect(workers).toEqual([])))
      })
    )

    it.scoped("a background run scheduled but in no queue (from before a restart, or turned away by a full queue) is queued when a worker asks", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const run = yield* delayed("restored", "0")
        yield* sql`DELETE FROM task_run_delivery WHERE task_run_id = ${run}`
        const socket = yield* worker({ keys: ["restored"], client_id: "restorer" })
        expect((yield* receive(socket)).id).toBe(run)
        socket.send({ type: "ack" })
        // Acknowledged and still Scheduled (the worker has not moved it yet): not delivered again,
        // though it is older than the next one.
        const next = yield* delayed("restored", "1")
        expect((yield* receive(socket)).id).toBe(next)
        socket.send({ type: "ack" })
      })
    )

    it.scoped("at start, a server queues the background runs still Scheduled that are in no queue", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const run = yield* delayed("at-start", "0")
        yield* sql`DELETE FROM task_run_delivery WHERE task_run_id = ${run}`
        // Another start: a new instance of the deliveries (as a restarted server builds it).
        yield* Layer.build(TaskRunDeliveries.Default)
        const queued = yield* sql<{ task_run_id: string }>`SELECT task_run_id FROM task_run_delivery WHERE task_run_id = ${run}`
        expect(queued).toHaveLength(1)
      })
    )

    it.scoped("a background run put in AwaitingRetry goes to the retry queue, served before the scheduled ones", () =>
      Effect.gen(function* () {
        const retried = yield* delayed("retries", "0")
        const first = yield* worker({ keys: ["retries"], client_id: "retrier" })
        expect((yield* receive(first)).id).toBe(retried)
        first.send({ type: "ack" })
        first.close()
        yield* closedWith(first)
        const setState = (state: Record<string, unknown>) =>
          Effect.map(request("POST", `/task_runs/${retried}/set_state`, { body: { state, force: true } }), (res) => ok(res).status as string)
        yield* setState({ type: "PENDING" })
        yield* setState({ type: "RUNNING" })
        // Two runs scheduled before the retry: the retry is served first all the same.
        const [a, b] = [yield* delayed("retries", "1"), yield* delayed("retries", "2")]
        yield* setState({ type: "SCHEDULED", name: "AwaitingRetry", state_details: { deferred: true } })
        const next = yield* worker({ keys: ["retries"], client_id: "second" })
        const order: Array<string> = []
        for (let i = 0; i < 3; i++) {
          order.push((yield* receive(next)).id)
          next.send({ type: "ack" })
        }
        expect(order).toEqual([retried, a, b])
      })
    )
  })
})
