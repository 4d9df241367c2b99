import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { checkReadiness } from "../../src/services/foreman.ts"
import { WorkPool } from "../../src/work-pools/schemas.ts"
import { ok, okAs, once } from "../support/api.ts"
import { clientOf, request, testServer } from "../support/server.ts"

const createPool = (body: Record<string, unknown>) => request("POST", "/work_pools/", { body })
const makePool = (body: Record<string, unknown>) => Effect.map(createPool(body), (res) => okAs(WorkPool, res, 201))
const readPool = (name: string) => Effect.flatMap(clientOf("workPools"), (workPools) => workPools.read({ path: { name } }))
const queuesOf = (pool: string, body: Record<string, unknown> = {}) =>
  Effect.map(request("POST", `/work_pools/${pool}/queues/filter`, { body }), (res) => ok(res, 200))
const patchPool = (name: string, body: Record<string, unknown>) => request("PATCH", `/work_pools/${name}`, { body })

const template = {
  job_configuration: { command: "{{ command }}", image: "{{ image }}" },
  variables: {
    type: "object",
    properties: { command: { type: "string" }, image: { type: "string", default: "python:3.12" } }
  }
}

/** A docker pool with the template above and a description. */
const dockerPool = (name: string) => makePool({ name, type: "docker", base_job_template: template, description: "d" })

/** Pools f-b (process), f-a and f-c (docker), read only. */
const filterSet = once(
  Effect.gen(function* () {
    yield* makePool({ name: "f-b", type: "process" })
    const a = yield* makePool({ name: "f-a", type: "docker" })
    yield* makePool({ name: "f-c", type: "docker" })
    return { a, scope: { name: { any_: ["f-a", "f-b", "f-c"] } } }
  })
)
const poolNames = (body: Record<string, unknown>) => Effect.map(request("POST", "/work_pools/filter", { body }), (res) => ok(res, 200).map((p) => p.name))

/** The pool crew with the workers old (10 s interval) and, 5 s later, new (twice). */
const crew = (name: string) =>
  Effect.gen(function* () {
    yield* makePool({ name, type: "process" })
    yield* beat(name, { name: "old", heartbeat_interval_seconds: 10 })
    yield* TestClock.adjust(Duration.seconds(5))
    yield* beat(name, { name: "new" })
    yield* beat(name, { name: "new" })
  })
const beat = (pool: string, body: Record<string, unknown>) => request("POST", `/work_pools/${pool}/workers/heartbeat`, { body })
const workers = (pool: string, body: Record<string, unknown> = {}) => Effect.map(request("POST", `/work_pools/${pool}/workers/filter`, { body }), (res) => ok(res, 200))

describe("work pools", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    describe("create", () => {
      it.effect("creates a pool (201) with the reference's fields", () =>
        Effect.gen(function* () {
          const pool = ok(yield* createPool({ name: "docker-pool", type: "docker", base_job_template: template, description: "d" }), 201)
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
          expect((yield* request("GET", "/work_pools/docker-pool")).body).toEqual(pool)
        }))

      it.effect("creates the pool's default queue with it", () =>
        Effect.gen(function* () {
          const pool = yield* dockerPool("with-default")
          const queues = yield* queuesOf("with-default")
          expect(queues).toHaveLength(1)
          expect(queues[0]).toMatchObject({
            id: pool.default_queue_id,
            name: "default",
            description: "The work pool's default queue.",
            priority: 1,
            work_pool_name: "with-default",
            status: "NOT_READY"
          })
        }))

      it.effect("a paused pool is PAUSED; with a limit, no slot taken", () =>
        Effect.gen(function* () {
          expect(yield* makePool({ name: "paused-pool", type: "k8s", is_paused: true, concurrency_limit: 2 })).toMatchObject({ status: "PAUSED", active_slots: 0 })
        }))

      it.effect("a pool of agents (no type) has no status", () =>
        Effect.gen(function* () {
          expect((yield* makePool({ name: "agents" })).status).toBeNull()
        }))

      it.effect("refuses names reserved for internal use (403)", () =>
        Effect.gen(function* () {
          const reserved = yield* createPool({ name: "Prefect-things" })
          expect(reserved.status).toBe(403)
          expect(reserved.body).toEqual({ detail: "Work pools starting with 'Prefect' are reserved for internal use." })
        }))

      it.effect("refuses a name taken (409)", () =>
        Effect.gen(function* () {
          yield* makePool({ name: "taken" })
          const dup = yield* createPool({ name: "taken" })
          expect(dup.status).toBe(409)
          expect(dup.body).toEqual({ detail: "A work pool with this name already exists." })
        }))

      for (const name of ["a/b", "", "' '"]) {
        it.effect(`refuses the name ${JSON.stringify(name)} (422)`, () => Effect.map(createPool({ name }), (res) => expect(res.status).toBe(422)))
      }

      it.effect("refuses a template without both job_configuration and variables (422)", () =>
        Effect.gen(function* () {
          const halfTemplate = yield* createPool({ name: "t1", base_job_template: { job_configuration: { a: 1 } } })
          expect(halfTemplate.status).toBe(422)
          expect(halfTemplate.body.detail[0].msg).toContain("The `base_job_template` must contain both a `job_configuration` key and a `variables` key.")
        }))

      it.effect("refuses a job configuration using variables the template does not declare", () =>
        Effect.gen(function* () {
          const undeclared = yield* createPool({ name: "t2", base_job_template: { job_configuration: { a: "{{ missing }}" }, variables: { properties: { x: {} } } } })
          expect(undeclared.body.detail[0].msg).toContain("Your job configuration uses the following undeclared variable(s): missing.")
        }))

      it.effect("refuses defaults that do not fit their variables (422), storing nothing", () =>
        Effect.gen(function* () {
          const badDefault = yield* createPool({
            name: "t3",
            base_job_template: { job_configuration: { a: "{{ n }}" }, variables: { type: "object", properties: { n: { type: "integer", default: "x" } } } }
          })
          expect(badDefault.status).toBe(422)
          expect(badDefault.body.detail).toBe(
            "Validation failed for work pool's job variable defaults: Validation failed for field 'n'. Failure reason: 'x' is not of type 'integer'"
          )
          expect((yield* request("GET", "/work_pools/t3")).body).toEqual({ detail: 'Work pool "t3" not found.' })
        }))

      it.effect("refuses a default naming a block document that does not exist (404)", () =>
        Effect.gen(function* () {
          const blockDefault = yield* createPool({
            name: "t4",
            base_job_template: {
              job_configuration: { a: "{{ creds }}" },
              variables: { type: "object", properties: { creds: { default: { $ref: { block_document_id: "00000000-0000-0000-0000-000000000000" } } } } }
            }
          })
          expect(blockDefault.status).toBe(404)
          expect(blockDefault.body).toEqual({ detail: "Block not found." })
        }))
    })

    describe("filter and count", () => {
      it.effect("filters by name, sorted by name", () =>
        Effect.gen(function* () {
          yield* filterSet
          expect(yield* poolNames({ work_pools: { name: { any_: ["f-c", "f-a", "f-b"] } } })).toEqual(["f-a", "f-b", "f-c"])
        }))

      it.effect("filters by type", () =>
        Effect.gen(function* () {
          const { scope } = yield* filterSet
          expect(yield* poolNames({ work_pools: { ...scope, type: { any_: ["docker"] } } })).toEqual(["f-a", "f-c"])
        }))

      it.effect("filters by id", () =>
        Effect.gen(function* () {
          const { a } = yield* filterSet
          expect(yield* poolNames({ work_pools: { id: { any_: [a.id] } } })).toEqual(["f-a"])
        }))

      it.effect("pages with offset and limit", () =>
        Effect.gen(function* () {
          const { scope } = yield* filterSet
          expect(yield* poolNames({ work_pools: scope, offset: 1, limit: 1 })).toEqual(["f-b"])
        }))

      it.effect("counts with a filter, or all of them", () =>
        Effect.gen(function* () {
          const { scope } = yield* filterSet
          expect((yield* request("POST", "/work_pools/count", { body: { work_pools: { ...scope, type: { any_: ["docker"] } } } })).body).toBe(2)
          expect((yield* request("POST", "/work_pools/count", { body: {} })).body).toBeGreaterThanOrEqual(3)
        }))

      it.effect("refuses a criterion it does not know (422)", () =>
        Effect.gen(function* () {
          expect((yield* request("POST", "/work_pools/filter", { body: { work_pools: { colour: 1 } } })).status).toBe(422)
        }))
    })

    describe("PATCH and DELETE", () => {
      it.effect("pausing makes a pool PAUSED; unpausing one without workers, NOT_READY", () =>
        Effect.gen(function* () {
          yield* makePool({ name: "pausy", type: "process" })
          expect((yield* patchPool("pausy", { is_paused: true })).status).toBe(204)
          expect(yield* readPool("pausy")).toMatchObject({ is_paused: true, status: "PAUSED" })
          yield* patchPool("pausy", { is_paused: false })
          expect((yield* readPool("pausy")).status).toBe("NOT_READY")
        }))

      it.effect("a worker's heartbeat makes a pool READY, and it stays READY through a pause and an unpause", () =>
        Effect.gen(function* () {
          yield* makePool({ name: "beaten", type: "process" })
          expect((yield* beat("beaten", { name: "w1" })).status).toBe(204)
          expect((yield* readPool("beaten")).status).toBe("READY")
          yield* patchPool("beaten", { is_paused: true })
          yield* patchPool("beaten", { is_paused: false })
          expect((yield* readPool("beaten")).status).toBe("READY")
        }))

      it.effect("sets a concurrency limit, a description and the storage configuration", () =>
        Effect.gen(function* () {
          yield* makePool({ name: "limited", type: "process" })
          yield* patchPool("limited", { concurrency_limit: 0, description: "limited", storage_configuration: { bundle_upload_step: { step: 1 } } })
          expect(yield* readPool("limited")).toMatchObject({
            concurrency_limit: 0,
            active_slots: 0,
            description: "limited",
            storage_configuration: { bundle_upload_step: { step: 1 }, bundle_execution_step: null }
          })
        }))

      it.effect("refuses a negative limit and a new type (422), an unknown pool (404) and a reserved one (403)", () =>
        Effect.gen(function* () {
          yield* makePool({ name: "patch-refused", type: "process" })
          expect((yield* patchPool("patch-refused", { concurrency_limit: -5 })).status).toBe(422)
          expect((yield* patchPool("patch-refused", { type: "docker" })).status).toBe(422)
          expect((yield* patchPool("nope", {})).status).toBe(404)
          expect((yield* patchPool("prefect-x", { description: "x" })).status).toBe(403)
        }))

      it.effect("DELETE removes the pool and its queues; once it is gone, 404", () =>
        Effect.gen(function* () {
          yield* makePool({ name: "deleted", type: "process" })
          expect((yield* request("DELETE", "/work_pools/deleted")).status).toBe(204)
          expect((yield* request("GET", "/work_pools/deleted")).status).toBe(404)
          const defaults = ok(yield* request("POST", "/work_queues/filter", { body: { work_queues: { name: { any_: ["default"] } } } }), 200)
          expect(defaults.filter((q) => q.work_pool_name === "deleted")).toEqual([])
          expect((yield* request("DELETE", "/work_pools/deleted")).status).toBe(404)
        }))

      it.effect("DELETE refuses a reserved pool", () =>
        Effect.gen(function* () {
          expect((yield* request("DELETE", "/work_pools/prefect-x")).body).toEqual({
            detail: "Work pools starting with 'Prefect' are reserved for internal use and can not be deleted."
          })
        }))
    })

    describe("workers", () => {
      it.effect("heartbeats make workers ONLINE, listed newest first, and their pool READY", () =>
        Effect.gen(function* () {
          yield* crew("crew")
          const listed = yield* workers("crew")
          expect(listed.map((w) => [w.name, w.status, w.heartbeat_interval_seconds])).toEqual([["new", "ONLINE", null], ["old", "ONLINE", 10]])
          expect((yield* workers("crew", { limit: 1 })).map((w) => w.name)).toEqual(["new"])
          expect((yield* readPool("crew")).status).toBe("READY")
        }))

      it.effect("a heartbeat without a name is 422; to an unknown pool, 404", () =>
        Effect.gen(function* () {
          yield* makePool({ name: "nameless", type: "process" })
          expect((yield* beat("nameless", {})).status).toBe(422)
          expect((yield* beat("nowhere", { name: "x" })).status).toBe(404)
        }))

      it.effect("the foreman takes workers OFFLINE after three missed intervals, and their pool NOT_READY when none is left", () =>
        Effect.gen(function* () {
          yield* crew("silent-crew")
          // Three missed intervals (10 s for "old", the 30 s fallback for "new").
          yield* TestClock.adjust(Duration.seconds(26))
          yield* checkReadiness
          expect((yield* workers("silent-crew", { workers: { status: { any_: ["OFFLINE"] } } })).map((w) => w.name)).toEqual(["old"])
          expect((yield* readPool("silent-crew")).status).toBe("READY")
          yield* TestClock.adjust(Duration.seconds(65))
          yield* checkReadiness
          expect(yield* workers("silent-crew", { workers: { status: { any_: ["ONLINE"] } } })).toEqual([])
          expect((yield* readPool("silent-crew")).status).toBe("NOT_READY")
        }))

      it.effect("deletes a worker (204); once it is gone, 404", () =>
        Effect.gen(function* () {
          yield* crew("smaller-crew")
          expect((yield* request("DELETE", "/work_pools/smaller-crew/workers/old")).status).toBe(204)
          expect((yield* request("DELETE", "/work_pools/smaller-crew/workers/old")).body).toEqual({ detail: "Worker not found." })
          expect((yield* workers("smaller-crew")).map((w) => w.name)).toEqual(["new"])
        }))
    })

    it.effect("task_workers/filter lists no task workers while none is subscribed", () =>
      Effect.gen(function* () {
        expect((yield* request("POST", "/task_workers/filter", { body: { task_worker_filter: { task_keys: ["t"] } } })).body).toEqual([])
        expect((yield* request("POST", "/task_workers/filter", { body: {} })).status).toBe(200)
      })
    )
  })
})
