import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { checkReadiness } from "../../src/services/foreman.ts"
import { rebalance } from "../../src/work-pools/queues-repo.ts"
import { ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const makePool = (body: Record<string, unknown>) => Effect.map(request("POST", "/work_pools/", { body }), (res) => ok(res, 201))
const readPool = (name: string) => Effect.map(request("GET", `/work_pools/${name}`), (res) => ok(res, 200))
const makeQueue = (pool: string, body: Record<string, unknown>) =>
  Effect.map(request("POST", `/work_pools/${pool}/queues`, { body }), (res) => ok(res, 201))
const queuesOf = (pool: string, body: Record<string, unknown> = {}) =>
  Effect.map(request("POST", `/work_pools/${pool}/queues/filter`, { body }), (res) => ok(res, 200) as Array<any>)

const template = {
  job_configuration: { command: "{{ command }}", image: "{{ image }}" },
  variables: {
    type: "object",
    properties: { command: { type: "string" }, image: { type: "string", default: "python:3.12" } }
  }
}

describe("work pools", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("creates a pool (201) with its default queue; reserved, duplicate and malformed ones are refused", () =>
      Effect.gen(function* () {
        const pool = yield* makePool({ name: "docker-pool", type: "docker", base_job_template: template, description: "d" })
        expect(pool).toMatchObject({
          name: "docker-pool",
          type: "docker",
          description: "d",
          is_paused: false,
          concurrency_limit: null,
          status: "NOT_READY",
          active_slots: null,
          base_job_template: template,
          storage_configuration: { bundle_upload_step: null, bundle_execution_step: null, default_result_storage_block_id: null }
        })
        const queues = yield* queuesOf("docker-pool")
        expect(queues).toHaveLength(1)
        expect(queues[0]).toMatchObject({
          id: pool.default_queue_id,
          name: "default",
          description: "The work pool's default queue.",
          priority: 1,
          work_pool_name: "docker-pool",
          status: "NOT_READY"
        })
        expect(yield* readPool("docker-pool")).toEqual(pool)
        expect((yield* makePool({ name: "paused-pool", type: "k8s", is_paused: true, concurrency_limit: 2 }))).toMatchObject({
          status: "PAUSED",
          active_slots: 0
        })
        expect((yield* makePool({ name: "agents" })).status).toBeNull()

        const reserved = yield* request("POST", "/work_pools/", { body: { name: "Prefect-things" } })
        expect(reserved.status).toBe(403)
        expect(reserved.body).toEqual({ detail: "Work pools starting with 'Prefect' are reserved for internal use." })
        const dup = yield* request("POST", "/work_pools/", { body: { name: "docker-pool" } })
        expect(dup.status).toBe(409)
        expect(dup.body).toEqual({ detail: "A work pool with this name already exists." })
        for (const name of ["a/b", "", "' '"]) {
          expect((yield* request("POST", "/work_pools/", { body: { name } })).status, name).toBe(422)
        }
        const halfTemplate = yield* request("POST", "/work_pools/", { body: { name: "t1", base_job_template: { job_configuration: { a: 1 } } } })
        expect(halfTemplate.status).toBe(422)
        expect(halfTemplate.body.detail[0].msg).toContain(
          "The `base_job_template` must contain both a `job_configuration` key and a `variables` key."
        )
        const undeclared = yield* request("POST", "/work_pools/", {
          body: { name: "t2", base_job_template: { job_configuration: { a: "{{ missing }}" }, variables: { properties: { x: {} } } } }
        })
        expect(undeclared.body.detail[0].msg).toContain("Your job configuration uses the following undeclared variable(s): missing.")
        const badDefault = yield* request("POST", "/work_pools/", {
          body: {
            name: "t3",
            base_job_template: { job_configuration: { a: "{{ n }}" }, variables: { type: "object", properties: { n: { type: "integer", default: "x" } } } }
          }
        })
        expect(badDefault.status).toBe(422)
        expect(badDefault.body.detail).toBe(
          "Validation failed for work pool's job variable defaults: Validation failed for field 'n'. Failure reason: 'x' is not of type 'integer'"
        )
        expect((yield* request("GET", "/work_pools/t3")).body).toEqual({ detail: 'Work pool "t3" not found.' })
        const blockDefault = yield* request("POST", "/work_pools/", {
          body: {
            name: "t4",
            base_job_template: {
              job_configuration: { a: "{{ creds }}" },
              variables: { type: "object", properties: { creds: { default: { $ref: { block_document_id: "00000000-0000-0000-0000-000000000000" } } } } }
            }
          }
        })
        expect(blockDefault.status).toBe(404)
        expect(blockDefault.body).toEqual({ detail: "Block not found." })
      })
    )

    it.effect("filters and counts pools by id, name and type, by name", () =>
      Effect.gen(function* () {
        yield* makePool({ name: "f-b", type: "process" })
        const a = yield* makePool({ name: "f-a", type: "docker" })
        yield* makePool({ name: "f-c", type: "docker" })
        const names = (body: Record<string, unknown>) =>
          Effect.map(request("POST", "/work_pools/filter", { body }), (res) => ok(res, 200).map((p: any) => p.name))
        expect(yield* names({ work_pools: { name: { any_: ["f-c", "f-a", "f-b"] } } })).toEqual(["f-a", "f-b", "f-c"])
        expect(yield* names({ work_pools: { name: { any_: ["f-a", "f-b", "f-c"] }, type: { any_: ["docker"] } } })).toEqual(["f-a", "f-c"])
        expect(yield* names({ work_pools: { id: { any_: [a.id] } } })).toEqual(["f-a"])
        expect(yield* names({ work_pools: { name: { any_: ["f-a", "f-b", "f-c"] } }, offset: 1, limit: 1 })).toEqual(["f-b"])
        const scope = { name: { any_: ["f-a", "f-b", "f-c"] } }
        expect((yield* request("POST", "/work_pools/count", { body: { work_pools: { ...scope, type: { any_: ["docker"] } } } })).body).toBe(2)
        expect((yield* request("POST", "/work_pools/count", { body: {} })).body).toBeGreaterThanOrEqual(3)
        expect((yield* request("POST", "/work_pools/filter", { body: { work_pools: { colour: 1 } } })).status).toBe(422)
      })
    )

    it.effect("PATCH pauses and unpauses (status follows its workers), sets limits and storage; DELETE takes the queues", () =>
      Effect.gen(function* () {
        yield* makePool({ name: "patchy", type: "process" })
        const patch = (body: Record<string, unknown>) => request("PATCH", "/work_pools/patchy", { body })
        expect((yield* patch({ is_paused: true })).status).toBe(204)
        expect(yield* readPool("patchy")).toMatchObject({ is_paused: true, status: "PAUSED" })
        yield* patch({ is_paused: false })
        expect((yield* readPool("patchy")).status).toBe("NOT_READY")
        expect((yield* request("POST", "/work_pools/patchy/workers/heartbeat", { body: { name: "w1" } })).status).toBe(204)
        expect((yield* readPool("patchy")).status).toBe("READY")
        yield* patch({ is_paused: true })
        yield* patch({ is_paused: false })
        expect((yield* readPool("patchy")).status).toBe("READY")
        yield* patch({ concurrency_limit: 0, description: "limited", storage_configuration: { bundle_upload_step: { step: 1 } } })
        expect(yield* readPool("patchy")).toMatchObject({
          concurrency_limit: 0,
          active_slots: 0,
          description: "limited",
          storage_configuration: { bundle_upload_step: { step: 1 }, bundle_execution_step: null }
        })
        expect((yield* patch({ concurrency_limit: -5 })).status).toBe(422)
        expect((yield* patch({ type: "docker" })).status).toBe(422)
        expect((yield* request("PATCH", "/work_pools/nope", { body: {} })).status).toBe(404)
        expect((yield* request("PATCH", "/work_pools/prefect-x", { body: { description: "x" } })).status).toBe(403)

        expect((yield* request("DELETE", "/work_pools/patchy")).status).toBe(204)
        expect((yield* request("GET", "/work_pools/patchy")).status).toBe(404)
        expect((yield* request("POST", "/work_queues/filter", { body: { work_queues: { name: { any_: ["default"] } } } })).body
          .filter((q: any) => q.work_pool_name === "patchy")).toEqual([])
        expect((yield* request("DELETE", "/work_pools/patchy")).status).toBe(404)
        expect((yield* request("DELETE", "/work_pools/prefect-x")).body).toEqual({
          detail: "Work pools starting with 'Prefect' are reserved for internal use and can not be deleted."
        })
      })
    )

    it.effect("queues in a pool keep unique priorities, as the reference moves them", () =>
      Effect.gen(function* () {
        expect([...rebalance([{ id: "A", priority: 1 }, { id: "B", priority: 2 }, { id: "C", priority: 3 }, { id: "D", priority: 2 }], new Map([["D", 2]])).entries()].sort())
          .toEqual([["A", 1], ["B", 3], ["C", 4], ["D", 2]])
        expect([...rebalance([{ id: "A", priority: 1 }, { id: "B", priority: 5 }, { id: "D", priority: 2 }], new Map([["D", 2]])).entries()].sort())
          .toEqual([["A", 1], ["B", 5], ["D", 2]])
        yield* makePool({ name: "prio", type: "process" })
        const priorities = () =>
          Effect.map(queuesOf("prio"), (queues) => Object.fromEntries(queues.map((q) => [q.name, q.priority])))
        expect((yield* makeQueue("prio", { name: "low", priority: 99 })).priority).toBe(99)
        expect((yield* makeQueue("prio", { name: "next" })).priority).toBe(2)
        expect((yield* makeQueue("prio", { name: "top", priority: 1 })).priority).toBe(1)
        expect(yield* priorities()).toEqual({ top: 1, default: 2, next: 3, low: 99 })
        yield* request("PATCH", "/work_pools/prio/queues/low", { body: { priority: 2 } })
        expect(yield* priorities()).toEqual({ top: 1, low: 2, default: 3, next: 4 })
        // Deleting leaves gaps; a new queue without a priority takes the first one.
        expect((yield* request("DELETE", "/work_pools/prio/queues/low")).status).toBe(204)
        expect((yield* makeQueue("prio", { name: "gap" })).priority).toBe(2)
        const dup = yield* request("POST", "/work_pools/prio/queues", { body: { name: "gap" } })
        expect(dup.status).toBe(409)
        expect(dup.body).toEqual({ detail: "A work queue with this name already exists in work pool 'prio'." })
        // A queue renamed to a name the pool has: the reference's integrity conflict.
        const renamed = yield* request("PATCH", "/work_pools/prio/queues/gap", { body: { name: "next" } })
        expect(renamed.status).toBe(409)
        expect(renamed.body).toEqual({
          detail: "Data integrity conflict. This usually means a unique or foreign key constraint was violated. See server logs for details."
        })
        expect((yield* request("POST", "/work_pools/prio/queues", { body: { name: "zero", priority: 0 } })).status).toBe(422)
        expect((yield* request("POST", "/work_pools/nowhere/queues", { body: { name: "x" } })).body).toEqual({
          detail: 'Work pool "nowhere" not found.'
        })
        const keep = yield* request("DELETE", "/work_pools/prio/queues/default")
        expect(keep.status).toBe(409)
        expect(keep.body).toEqual({ detail: "Can't delete a pool's default queue." })
      })
    )

    it.effect("filters a pool's queues as the spec says", () =>
      Effect.gen(function* () {
        yield* makePool({ name: "spec-pool", type: "process" })
        const a = yield* makeQueue("spec-pool", { name: "alpha", priority: 2 })
        yield* makeQueue("spec-pool", { name: "alphabet" })
        yield* makeQueue("spec-pool", { name: "beta" })
        yield* makeQueue("spec-pool", { name: "Alps" })
        const names = (body: Record<string, unknown>) => Effect.map(queuesOf("spec-pool", body), (qs) => qs.map((q) => q.name))
        expect(yield* names({})).toEqual(["default", "alpha", "alphabet", "beta", "Alps"])
        expect(yield* names({ work_queues: { id: { any_: [a.id] } } })).toEqual(["alpha"])
        expect(yield* names({ work_queues: { name: { any_: ["beta", "nothing"] } } })).toEqual(["beta"])
        expect(yield* names({ work_queues: { name: { startswith_: ["alp"] } } })).toEqual(["alpha", "alphabet", "Alps"])
        expect(yield* names({ work_queues: { name: { startswith_: ["alp"], any_: ["alpha", "beta"] } } })).toEqual(["alpha"])
        expect(yield* names({ work_queues: { operator: "or_", id: { any_: [a.id] }, name: { any_: ["beta"] } } })).toEqual(["alpha", "beta"])
        expect(yield* names({ offset: 3 })).toEqual(["beta", "Alps"])
        expect(yield* names({ limit: 2 })).toEqual(["default", "alpha"])
        const negative = yield* request("POST", "/work_pools/spec-pool/queues/filter", { body: { offset: -1 } })
        expect(negative.status).toBe(422)
        expect(negative.body.detail[0].loc).toEqual(["body", "offset"])
        expect((yield* request("POST", "/work_pools/nowhere/queues/filter", { body: {} })).status).toBe(404)
        const first = (yield* queuesOf("spec-pool"))[0]
        expect(Object.keys(first).sort()).toEqual(
          ["active_slots", "concurrency_limit", "created", "description", "filter", "id", "is_paused", "last_polled", "name",
            "priority", "status", "updated", "work_pool_id", "work_pool_name"].sort()
        )
        const badName = yield* request("POST", "/work_pools/spec-pool/queues", { body: { name: "a>b" } })
        expect(badName.status).toBe(422)
        expect((yield* request("POST", "/work_pools/spec-pool/queues", { body: { name: "neg", concurrency_limit: -1 } })).status).toBe(422)
      })
    )

    it.effect("answers at most default_limit (200) queues, and the rest with an offset", () =>
      Effect.gen(function* () {
        yield* makePool({ name: "big-pool", type: "process" })
        for (let i = 0; i < 249; i++) yield* makeQueue("big-pool", { name: `q-${String(i).padStart(3, "0")}` })
        expect(yield* queuesOf("big-pool")).toHaveLength(200)
        expect(yield* queuesOf("big-pool", { offset: 200 })).toHaveLength(50)
        expect((yield* request("POST", "/work_pools/big-pool/queues/filter", { body: { limit: 250 } })).status).toBe(422)
        expect(yield* queuesOf("big-pool", { work_queues: { name: { startswith_: ["q-24"] } } })).toHaveLength(9)
      })
    )

    it.effect("queue PATCH: pausing makes it PAUSED, unpausing NOT_READY (or READY when polled lately)", () =>
      Effect.gen(function* () {
        yield* makePool({ name: "q-status", type: "process" })
        yield* makeQueue("q-status", { name: "q" })
        const read = () => Effect.map(request("GET", "/work_pools/q-status/queues/q"), (res) => ok(res, 200))
        yield* request("PATCH", "/work_pools/q-status/queues/q", { body: { is_paused: true, concurrency_limit: 3, description: "x" } })
        expect(yield* read()).toMatchObject({ is_paused: true, status: "PAUSED", concurrency_limit: 3, active_slots: 0, description: "x" })
        yield* request("PATCH", "/work_pools/q-status/queues/q", { body: { is_paused: false } })
        expect((yield* read()).status).toBe("NOT_READY")
        yield* request("PATCH", "/work_pools/q-status/queues/q", { body: { is_paused: true } })
        const clock = yield* TestClock.currentTimeMillis
        yield* request("PATCH", "/work_pools/q-status/queues/q", { body: { is_paused: false, last_polled: new Date(clock).toISOString() } })
        expect((yield* read()).status).toBe("READY")
        yield* request("PATCH", "/work_pools/q-status/queues/q", { body: { name: "renamed" } })
        expect((yield* request("GET", "/work_pools/q-status/queues/renamed")).status).toBe(200)
        const missing = yield* request("GET", "/work_pools/q-status/queues/q")
        expect(missing.body).toEqual({ detail: "Work pool queue 'q-status/q' not found." })
        yield* makeQueue("q-status", { name: "other" })
        expect((yield* request("PATCH", "/work_pools/q-status/queues/other", { body: { name: "renamed" } })).status).toBe(409)
      })
    )

    it.effect("workers: heartbeats make them ONLINE, the newest first; deleting one; the foreman takes silent ones OFFLINE", () =>
      Effect.gen(function* () {
        yield* makePool({ name: "crew", type: "process" })
        const beat = (body: Record<string, unknown>) => request("POST", "/work_pools/crew/workers/heartbeat", { body })
        yield* beat({ name: "old", heartbeat_interval_seconds: 10 })
        yield* TestClock.adjust(Duration.seconds(5))
        yield* beat({ name: "new" })
        yield* beat({ name: "new" })
        const workers = (body: Record<string, unknown> = {}) =>
          Effect.map(request("POST", "/work_pools/crew/workers/filter", { body }), (res) => ok(res, 200) as Array<any>)
        const listed = yield* workers()
        expect(listed.map((w) => [w.name, w.status, w.heartbeat_interval_seconds])).toEqual([["new", "ONLINE", null], ["old", "ONLINE", 10]])
        expect((yield* workers({ limit: 1 })).map((w) => w.name)).toEqual(["new"])
        expect((yield* readPool("crew")).status).toBe("READY")
        expect((yield* beat({})).status).toBe(422)
        expect((yield* request("POST", "/work_pools/nowhere/workers/heartbeat", { body: { name: "x" } })).status).toBe(404)

        // Three missed intervals (10 s for "old", the 30 s fallback for "new").
        yield* TestClock.adjust(Duration.seconds(26))
        yield* checkReadiness
        expect((yield* workers({ workers: { status: { any_: ["OFFLINE"] } } })).map((w) => w.name)).toEqual(["old"])
        expect((yield* readPool("crew")).status).toBe("READY")
        yield* TestClock.adjust(Duration.seconds(65))
        yield* checkReadiness
        expect((yield* workers({ workers: { status: { any_: ["ONLINE"] } } }))).toEqual([])
        expect((yield* readPool("crew")).status).toBe("NOT_READY")

        expect((yield* request("DELETE", "/work_pools/crew/workers/old")).status).toBe(204)
        expect((yield* request("DELETE", "/work_pools/crew/workers/old")).body).toEqual({ detail: "Worker not found." })
        expect((yield* workers()).map((w) => w.name)).toEqual(["new"])
      })
    )

    it.effect("task_workers/filter lists no task workers while none is subscribed", () =>
      Effect.gen(function* () {
        expect((yield* request("POST", "/task_workers/filter", { body: { task_worker_filter: { task_keys: ["t"] } } })).body).toEqual([])
        expect((yield* request("POST", "/task_workers/filter", { body: {} })).status).toBe(200)
      })
    )
  })
})
