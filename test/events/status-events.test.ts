import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { EventPersister } from "../../src/events/persister.ts"
import { checkReadiness } from "../../src/services/foreman.ts"
import { makeDeployment, makeFlow, ok } from "../support/api.ts"
import { eventually } from "../support/eventually.ts"
import { request, testServer } from "../support/server.ts"

/** The status events about `resourceId`, oldest first (event names only unless `full`). */
const statusEvents = (resourceId: string) =>
  Effect.gen(function* () {
    // The status events are emitted by a background fiber: let it run.
    yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 100)))
    yield* Effect.flatMap(EventPersister, (p) => p.drain)
    const res = yield* request("POST", "/events/filter", {
      body: { filter: { resource: { id: [resourceId] }, occurred: { since: "1970-01-01T00:00:00Z" }, order: "ASC" } }
    })
    return ok(res, 200).events
  })

describe("the events the server emits about what changes", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("work pools, work queues and deployments announce READY, NOT_READY and PAUSED as the reference names them", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.UTC(2026, 10, 24, 8, 0, 0))
        const pool = ok(yield* request("POST", "/work_pools/", { body: { name: "statusy", type: "process" } }), 201)
        const queue = ok(yield* request("POST", "/work_pools/statusy/queues", { body: { name: "q" } }), 201)
        const flowId = yield* makeFlow("status-flow")
        const deployment = yield* makeDeployment({ name: "status-dep", flow_id: flowId, work_pool_name: "statusy", work_queue_name: "q" })

        // A worker's heartbeat makes the pool READY; its poll makes the queue and the deployment READY.
        ok(yield* request("POST", "/work_pools/statusy/workers/heartbeat", { body: { name: "w1", heartbeat_interval_seconds: 30 } }), 204)
        ok(yield* request("POST", "/work_pools/statusy/get_scheduled_flow_runs", { body: { work_queue_names: ["q"] } }), 200)
        yield* TestClock.adjust("1 second")
        // A second poll changes nothing, so says nothing.
        ok(yield* request("POST", "/work_pools/statusy/get_scheduled_flow_runs", { body: { work_queue_names: ["q"] } }), 200)

        const poolEvents = yield* statusEvents(`prefect.work-pool.${pool.id}`)
        expect(poolEvents.map((e) => e.event)).toEqual(["prefect.work-pool.ready"])
        expect(poolEvents[0].resource).toEqual({ "prefect.resource.id": `prefect.work-pool.${pool.id}`, "prefect.resource.name": "statusy", "prefect.work-pool.type": "process" })

        const queueEvents = yield* statusEvents(`prefect.work-queue.${queue.id}`)
        expect(queueEvents.map((e) => e.event)).toEqual(["prefect.work-queue.ready"])
        expect(queueEvents[0].resource).toMatchObject({ "prefect.resource.name": "q", "prefect.resource.role": "work-queue" })
        expect(queueEvents[0].related).toEqual([
          { "prefect.resource.id": `prefect.work-pool.${pool.id}`, "prefect.resource.name": "statusy", "prefect.work-pool.type": "process", "prefect.resource.role": "work-pool" }
        ])

        const deploymentEvents = yield* statusEvents(`prefect.deployment.${deployment.id}`)
        expect(deploymentEvents.map((e) => e.event)).toEqual(["prefect.deployment.ready"])
        expect(deploymentEvents[0].related.map((r) => r["prefect.resource.role"])).toEqual(["flow", "work-queue", "work-pool"])

        // Pausing says PAUSED; the foreman, once nothing polls or beats, says NOT_READY.
        expect((yield* request("PATCH", `/work_queues/${queue.id}`, { body: { is_paused: true } })).status).toBe(204)
        expect((yield* request("PATCH", "/work_pools/statusy", { body: { is_paused: true } })).status).toBe(204)
        yield* TestClock.adjust("1 second")
        expect((yield* request("PATCH", "/work_pools/statusy", { body: { is_paused: false } })).status).toBe(204)
        yield* TestClock.adjust("10 minutes")
        yield* checkReadiness
        expect((yield* statusEvents(`prefect.work-pool.${pool.id}`)).map((e) => e.event)).toEqual([
          "prefect.work-pool.ready",
          "prefect.work-pool.paused",
          "prefect.work-pool.ready",
          "prefect.work-pool.not-ready"
        ])
        expect((yield* statusEvents(`prefect.work-queue.${queue.id}`)).map((e) => e.event)).toEqual(["prefect.work-queue.ready", "prefect.work-queue.paused"])
        expect((yield* statusEvents(`prefect.deployment.${deployment.id}`)).map((e) => e.event)).toEqual(["prefect.deployment.ready", "prefect.deployment.not-ready"])
      }))

    it.effect("emits an event for every flow run state change, with the run's resources", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("evented", { tags: ["flow-tag"] })
        ok(yield* request("POST", "/work_pools/", { body: { name: "evented-pool", type: "process" } }), 201)
        const deployment = ok(
          yield* request("POST", "/deployments/", {
            body: { name: "evented-dep", flow_id: flowId, tags: ["dep-tag"], work_pool_name: "evented-pool" }
          }),
          201
        )
        const run = ok(
          yield* request("POST", `/deployments/${deployment.id}/create_flow_run`, { body: { tags: ["run-tag"], state: { type: "SCHEDULED" } } }),
          201
        )
        yield* TestClock.adjust("1 second")
        ok(yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "PENDING" } } }), 201)
        yield* TestClock.adjust("1 second")
        ok(yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "RUNNING", message: "go" } } }), 201)
        // The emitter works in the background: wait for its events.
        const found = yield* eventually(
          Effect.gen(function* () {
            yield* Effect.flatMap(EventPersister, (p) => p.drain)
            const events = ok(
              yield* request("POST", "/events/filter", {
                body: { filter: { resource: { id: [`prefect.flow-run.${run.id}`] }, order: "ASC", occurred: { since: "2000-01-01T00:00:00Z" } } }
              }),
              200
            ).events
            expect(events.map((e) => e.event)).toEqual(["prefect.flow-run.Scheduled", "prefect.flow-run.Pending", "prefect.flow-run.Running"])
            return events
          })
        )
        const running = found[2]
        expect(running.resource).toMatchObject({
          "prefect.resource.name": run.name,
          "prefect.state-type": "RUNNING",
          "prefect.state-name": "Running",
          "prefect.state-message": "go",
          "prefect.run-count": "1"
        })
        expect(running.payload).toEqual({
          intended: { from: "PENDING", to: "RUNNING" },
          initial_state: { type: "PENDING", name: "Pending" },
          validated_state: { type: "RUNNING", name: "Running", message: "go" }
        })
        expect(running.follows).toBe(found[1].id)
        const roles = running.related.map((r) => [r["prefect.resource.role"], r["prefect.resource.id"]])
        const pool = running.related.find((r) => r["prefect.resource.role"] === "work-pool")
        expect(pool).toMatchObject({ "prefect.resource.name": "evented-pool", "prefect.work-pool.type": "process" })
        expect(roles).toEqual(
          expect.arrayContaining([
            ["flow", `prefect.flow.${flowId}`],
            ["deployment", `prefect.deployment.${deployment.id}`],
            ["work-queue", expect.stringMatching(/^prefect\.work-queue\./)],
            ["work-pool", expect.stringMatching(/^prefect\.work-pool\./)],
            ["tag", "prefect.tag.dep-tag"],
            ["tag", "prefect.tag.flow-tag"],
            ["tag", "prefect.tag.run-tag"]
          ])
        )
      })
    )
  })
})
