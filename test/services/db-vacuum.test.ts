import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { EventPersister } from "../../src/events/persister.ts"
import { vacuum } from "../../src/services/db-vacuum.ts"
import { idOf, makeFlow, ok } from "../support/api.ts"
import { readingRows } from "../support/rows-read.ts"
import { request, testServer } from "../support/server.ts"

const DAY = 24 * 3600 * 1000

const runTo = (flowId: string, ...states: Array<string>) =>
  Effect.gen(function* () {
    const run = ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } }), 201)
    for (const type of states) ok(yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type }, force: true } }), 200, 201)
    return idOf(run)
  })

describe("the database vacuum", () => {
  it.layer(testServer({ overrides: { "server.services.db_vacuum.batch_size": 2 } }), { timeout: 60_000 })((it) => {
    it.effect("deletes, in batches, events past retention and runs that ended before its retention period, with their logs and artifacts", () =>
      Effect.gen(function* () {
        const start = Date.UTC(2026, 0, 1)
        yield* TestClock.setTime(start)
        const flowId = yield* makeFlow("vacuumed")
        const old = [yield* runTo(flowId, "RUNNING", "COMPLETED"), yield* runTo(flowId, "RUNNING", "FAILED"), yield* runTo(flowId, "RUNNING", "CANCELLED")]
        const stillRunning = yield* runTo(flowId, "RUNNING")
        ok(yield* request("POST", "/logs/", { body: [{ name: "x", level: 20, message: "old", timestamp: new Date(start).toISOString(), flow_run_id: old[0] }] }), 201)
        ok(yield* request("POST", "/artifacts/", { body: { key: "report", data: 1, flow_run_id: old[0] } }), 201)
        ok(yield* request("POST", "/events", { body: [{ id: "00000000-0000-4000-a000-000000000001", occurred: new Date(start).toISOString(), event: "old.event", resource: { "prefect.resource.id": "x" } }] }), 204)

        yield* TestClock.adjust(91 * DAY)
        const recent = yield* runTo(flowId, "RUNNING", "COMPLETED")
        ok(yield* request("POST", "/artifacts/", { body: { key: "report", data: 2, flow_run_id: recent } }), 201)
        ok(yield* request("POST", "/events", { body: [{ id: "00000000-0000-4000-a000-000000000002", occurred: new Date(start + 91 * DAY).toISOString(), event: "new.event", resource: { "prefect.resource.id": "x" } }] }), 204)
        yield* Effect.flatMap(EventPersister, (p) => p.drain)

        const deleted = yield* vacuum
        expect(deleted.flowRuns).toBe(3)
        expect(deleted.events).toBeGreaterThanOrEqual(1)
        for (const id of old) expect((yield* request("GET", `/flow_runs/${id}`)).status).toBe(404)
        expect((yield* request("GET", `/flow_runs/${stillRunning}`)).status).toBe(200)
        expect((yield* request("GET", `/flow_runs/${recent}`)).status).toBe(200)
        const logs = ok(yield* request("POST", "/logs/filter", { body: { logs: { flow_run_id: { any_: [old[0]] } } } }), 200)
        expect(logs).toEqual([])
        // The key's collection now shows the artifact that is left.
        expect(ok(yield* request("GET", "/artifacts/report/latest"), 200).data).toBe(2)
        const events = ok(yield* request("POST", "/events/filter", { body: { filter: { occurred: { since: "2025-01-01T00:00:00Z" } } } }), 200).events
        expect(events.map((e) => e.event)).not.toContain("old.event")
        expect(events.map((e) => e.event)).toContain("new.event")
        expect((yield* vacuum).flowRuns).toBe(0)
      }))

    it.effect("deletes a run's cached task results by their state, without reading the other cache entries", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* TestClock.setTime(Date.UTC(2027, 0, 1))
        // What the test before left past retention goes first.
        yield* vacuum
        const flowId = yield* makeFlow("vacuumed-cache")
        const cachedTask = (flowRunId: string, key: string) =>
          Effect.gen(function* () {
            const task = ok(yield* request("POST", "/task_runs/", { body: { flow_run_id: flowRunId, task_key: key, dynamic_key: "0" } }), 201)
            const answer = ok(yield* request("POST", `/task_runs/${task.id}/set_state`, {
              body: { state: { type: "COMPLETED", state_details: { cache_key: key } }, force: true }
            }), 200, 201)
            return answer.state.id as string
          })
        const old = yield* runTo(flowId, "RUNNING")
        yield* cachedTask(old, "old-key")
        ok(yield* request("POST", `/flow_runs/${old}/set_state`, { body: { state: { type: "COMPLETED" }, force: true } }), 200, 201)
        yield* TestClock.adjust(91 * DAY)
        const kept = yield* runTo(flowId, "RUNNING")
        const keptState = yield* cachedTask(kept, "kept-key")
        // Many entries of a state that stays: a lookup that reads the whole cache reads them all.
        yield* sql`
          INSERT INTO task_run_state_cache (id, created, cache_key, cache_expiration, task_run_state_id)
          SELECT gen_random_uuid(), now(), 'filler-' || i, NULL, ${keptState} FROM generate_series(1, 3000) i
        `
        yield* sql`ANALYZE task_run_state_cache`
        const pass = yield* readingRows("task_run_state_cache", vacuum)
        expect(pass.result.flowRuns).toBe(1)
        // The old run's one entry found through its state: a few rows, not 3,000.
        expect(pass.read).toBeLessThan(50)
        const keys = yield* sql<{ key: string }>`SELECT DISTINCT cache_key AS key FROM task_run_state_cache WHERE cache_key IN ('old-key', 'kept-key')`
        expect(keys.map((k) => k.key)).toEqual(["kept-key"])
        expect((yield* request("GET", `/flow_runs/${kept}`)).status).toBe(200)
      }))
  })
})
