import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { idOf, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"
import { connect, opened } from "../support/websocket.ts"

const delayed = (taskKey: string, dynamicKey: string) =>
  Effect.map(
    request("POST", "/task_runs/", {
      body: { task_key: taskKey, dynamic_key: dynamicKey, state: { type: "SCHEDULED", state_details: { deferred: true } } }
    }),
    (res) => idOf(ok(res, 201))
  )

const worker = (keys: Array<string>, clientId: string) =>
  Effect.gen(function* () {
    const socket = opened(yield* connect("/task_runs/subscriptions/scheduled"))
    socket.send({ type: "auth", token: null })
    expect(yield* Effect.promise(() => socket.next())).toEqual({ type: "auth_success" })
    socket.send({ type: "subscribe", keys, client_id: clientId })
    yield* Effect.addFinalizer(() => Effect.sync(() => socket.close()))
    return socket
  })

describe("background task queues under their settings", () => {
  it.layer(
    testServer({ overrides: { "server.tasks.scheduling.max_scheduled_queue_size": 2, "server.tasks.scheduling.pending_task_timeout": "PT10S" } }),
    { timeout: 60_000 }
  )((it) => {
    it.scoped("a key's queue holds max_scheduled_queue_size runs; the rest are queued as it drains, none lost", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const ids = [] as Array<string>
        for (let i = 0; i < 5; i++) ids.push(yield* delayed("bounded", String(i)))
        const queued = yield* sql<{ count: string }>`SELECT count(*) FROM task_run_delivery WHERE task_key = 'bounded'`
        expect(Number(queued[0]!.count)).toBe(2)
        const socket = yield* worker(["bounded"], "drainer")
        const got: Array<string> = []
        for (let i = 0; i < 5; i++) {
          got.push(((yield* Effect.promise(() => socket.next(5000))) as unknown as { id: string }).id)
          socket.send({ type: "ack" })
        }
        expect([...got].sort()).toEqual([...ids].sort())
      })
    )

    it.scoped("a run Pending longer than pending_task_timeout is scheduled again for another worker", () =>
      Effect.gen(function* () {
        const run = yield* delayed("stalls", "0")
        const first = yield* worker(["stalls"], "stalling")
        expect(((yield* Effect.promise(() => first.next(5000))) as unknown as { id: string }).id).toBe(run)
        first.send({ type: "ack" })
        // The worker takes it (Pending) and never runs it.
        expect(ok(yield* request("POST", `/task_runs/${run}/set_state`, { body: { state: { type: "PENDING" } } })).status).toBe("ACCEPT")
        first.close()
        yield* TestClock.adjust("11 seconds")
        const second = yield* worker(["stalls"], "rescuer")
        const again = (yield* Effect.promise(() => second.next(5000))) as unknown as { id: string; state: { type: string } }
        expect(again).toMatchObject({ id: run, state: { type: "SCHEDULED" } })
        second.send({ type: "ack" })
        const states = ok(yield* request("GET", `/task_run_states/?task_run_id=${run}`), 200).map((s) => s.type as string)
        expect(states).toEqual(["SCHEDULED", "PENDING", "SCHEDULED"])
      })
    )
  })
})
