import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { LateRunsRepo } from "../../src/services/late-runs-repo.ts"
import { markLateRuns } from "../../src/services/late-runs.ts"
import { repossessExpiredLeases } from "../../src/services/repossessor.ts"
import type { Deployment } from "../../src/deployments/schemas.ts"
import { idOf, makeDeployment, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const runOf = (deploymentId: string, body: Record<string, unknown> = {}) =>
  Effect.map(request("POST", `/deployments/${deploymentId}/create_flow_run`, { body }), (res) => idOf(ok(res)))

const propose = (id: string, state: Record<string, unknown>, kind: "flow_runs" | "task_runs" = "flow_runs") =>
  Effect.map(request("POST", `/${kind}/${id}/set_state`, { body: { state } }), (res) => ok(res))

/** The slots taken of a deployment's own limit. */
const slotsOf = (deployment: typeof Deployment.Encoded) =>
  Effect.map(request("GET", `/v2/concurrency_limits/${deployment.global_concurrency_limit!.id}`), (res) => ok(res, 200).active_slots)

/** A deployment limited to one run at a time that cancels new runs when full. */
const cancelNew = (flowName: string) =>
  Effect.flatMap(makeFlow(flowName), (flowId) =>
    makeDeployment({ name: "cancel-new", flow_id: flowId, concurrency_limit: 1, concurrency_options: { collision_strategy: "CANCEL_NEW" } })
  )

describe("concurrency in orchestration", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("a deployment's runs take its slots at Pending; the next one waits (ENQUEUE) until one finishes", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("dc-enqueue")
        const dep = yield* makeDeployment({ name: "limited", flow_id: flowId, concurrency_limit: 2 })
        const [a, b, c] = [yield* runOf(dep.id), yield* runOf(dep.id), yield* runOf(dep.id)]
        const first = yield* propose(a, { type: "PENDING" })
        expect(first.status).toBe("ACCEPT")
        expect(first.state.state_details.deployment_concurrency_lease_id).toEqual(expect.any(String))
        expect((yield* propose(b, { type: "PENDING" })).status).toBe("ACCEPT")
        expect(yield* slotsOf(dep)).toBe(2)
        const clock = yield* TestClock.currentTimeMillis
        const third = yield* propose(c, { type: "PENDING" })
        expect(third).toMatchObject({
          status: "REJECT",
          details: { reason: "Deployment concurrency limit reached." },
          state: { type: "SCHEDULED", name: "AwaitingConcurrencySlot" }
        })
        expect(Date.parse(third.state.state_details.scheduled_time as string)).toBe(clock + 30_000)
        expect(yield* slotsOf(dep)).toBe(2)

        // A worker re-proposing Pending keeps the lease; Running keeps the slot; Completed gives it back.
        const again = yield* propose(a, { type: "PENDING", name: "Submitting" })
        expect(again.state.state_details.deployment_concurrency_lease_id).toBe(first.state.state_details.deployment_concurrency_lease_id)
        yield* propose(a, { type: "RUNNING" })
        expect(yield* slotsOf(dep)).toBe(2)
        yield* propose(a, { type: "COMPLETED" })
        expect(yield* slotsOf(dep)).toBe(1)
        yield* TestClock.adjust(Duration.seconds(30))
        expect((yield* propose(c, { type: "PENDING" })).status).toBe("ACCEPT")
        expect(yield* slotsOf(dep)).toBe(2)

        // Cancelling keeps the slot until Cancelled; deleting a run that holds one gives it back.
        yield* propose(b, { type: "RUNNING" })
        yield* request("PATCH", `/flow_runs/${b}`, { body: { infrastructure_pid: "pid" } })
        expect((yield* propose(b, { type: "CANCELLING" })).status).toBe("ACCEPT")
        expect(yield* slotsOf(dep)).toBe(2)
        yield* propose(b, { type: "CANCELLED" })
        expect(yield* slotsOf(dep)).toBe(1)
        expect((yield* request("DELETE", `/flow_runs/${c}`)).status).toBe(204)
        expect(yield* slotsOf(dep)).toBe(0)
      })
    )

    it.effect("CANCEL_NEW cancels a run that finds the limit full", () =>
      Effect.gen(function* () {
        const dep = yield* cancelNew("dc-cancel")
        yield* propose(yield* runOf(dep.id), { type: "PENDING" })
        const refused = yield* propose(yield* runOf(dep.id), { type: "PENDING" })
        expect(refused).toMatchObject({
          status: "REJECT",
          details: { reason: "Deployment concurrency limit reached." },
          state: { type: "CANCELLED", message: "Deployment concurrency limit reached." }
        })
      })
    )

    it.effect("a late run of a full CANCEL_NEW deployment is cancelled rather than marked Late", () =>
      Effect.gen(function* () {
        const dep = yield* cancelNew("dc-cancel-late")
        yield* propose(yield* runOf(dep.id), { type: "PENDING" })
        const clock = yield* TestClock.currentTimeMillis
        const late = yield* runOf(dep.id, { state: { type: "SCHEDULED", state_details: { scheduled_time: new Date(clock - 60_000).toISOString() } } })
        yield* Effect.provide(markLateRuns, LateRunsRepo.Default)
        expect((yield* request("GET", `/flow_runs/${late}`)).body.state_type).toBe("CANCELLED")
      })
    )

    it.effect("a deployment limit of 0 aborts: the flow would deadlock", () =>
      Effect.gen(function* () {
        const dep = yield* cancelNew("dc-zero")
        yield* request("PATCH", `/v2/concurrency_limits/${dep.global_concurrency_limit!.id}`, { body: { limit: 0 } })
        const zero = yield* propose(yield* runOf(dep.id), { type: "PENDING" })
        expect(zero).toMatchObject({
          status: "ABORT",
          details: { reason: "The deployment concurrency limit is 0. The flow will deadlock if submitted again." }
        })
      })
    )

    it.effect("a lapsed lease is taken anew at Running when there is room, and the run is cancelled when there is none", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("dc-lapse")
        const dep = yield* makeDeployment({
          name: "lapse",
          flow_id: flowId,
          concurrency_limit: 1,
          concurrency_options: { collision_strategy: "ENQUEUE", grace_period_seconds: 60 }
        })
        const a = yield* runOf(dep.id)
        const pending = yield* propose(a, { type: "PENDING" })
        // The lease lapses and the repossessor gives the slot back.
        yield* TestClock.adjust(Duration.seconds(61))
        yield* repossessExpiredLeases
        expect(yield* slotsOf(dep)).toBe(0)
        const running = yield* propose(a, { type: "RUNNING" })
        expect(running.status).toBe("ACCEPT")
        const newLease = running.state.state_details.deployment_concurrency_lease_id
        expect(newLease).not.toBe(pending.state.state_details.deployment_concurrency_lease_id)
        expect(yield* slotsOf(dep)).toBe(1)

        // Another run's lease lapses while the slot is taken: it cannot run.
        yield* propose(a, { type: "COMPLETED" })
        const b = yield* runOf(dep.id)
        yield* propose(b, { type: "PENDING" })
        yield* TestClock.adjust(Duration.seconds(61))
        yield* repossessExpiredLeases
        const c = yield* runOf(dep.id)
        expect((yield* propose(c, { type: "PENDING" })).status).toBe("ACCEPT")
        const lost = yield* propose(b, { type: "RUNNING" })
        expect(lost).toMatchObject({ status: "REJECT", state: { type: "CANCELLED" } })
        expect(lost.state.message).toContain("concurrency slot lost")
        expect(yield* slotsOf(dep)).toBe(1)
      })
    )

    it.effect("a task run takes a slot of each of its tags' limits at Running, or waits", () =>
      Effect.gen(function* () {
        yield* request("POST", "/concurrency_limits/", { body: { tag: "gpu", concurrency_limit: 1 } })
        yield* request("POST", "/concurrency_limits/", { body: { tag: "off", concurrency_limit: 1 } })
        yield* request("PATCH", "/v2/concurrency_limits/tag:off", { body: { active: false } })
        const flowId = yield* makeFlow("tags")
        const flowRun = idOf(ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })))
        yield* propose(flowRun, { type: "RUNNING" })
        const task = (key: string, tags: Array<string>) =>
          Effect.map(request("POST", "/task_runs/", { body: { flow_run_id: flowRun, task_key: key, dynamic_key: "0", tags } }), (res) => idOf(ok(res)))
        const one = yield* task("one", ["gpu", "off"])
        const two = yield* task("two", ["gpu"])
        expect((yield* propose(one, { type: "RUNNING" }, "task_runs")).status).toBe("ACCEPT")
        expect(ok(yield* request("GET", "/concurrency_limits/tag/gpu"), 200).active_slots).toEqual([one])
        expect(ok(yield* request("GET", "/concurrency_limits/tag/off"), 200).active_slots).toEqual([])
        const waiting = yield* propose(two, { type: "RUNNING" }, "task_runs")
        expect(waiting).toMatchObject({ status: "WAIT", details: { reason: "Concurrency limit reached for tags: gpu" } })
        expect(waiting.details.delay_seconds).toBeGreaterThanOrEqual(1)
        expect(waiting.details.delay_seconds).toBeLessThanOrEqual(3)
        yield* propose(one, { type: "COMPLETED" }, "task_runs")
        expect(ok(yield* request("GET", "/concurrency_limits/tag/gpu"), 200).active_slots).toEqual([])
        expect((yield* propose(two, { type: "RUNNING" }, "task_runs")).status).toBe("ACCEPT")

        yield* request("POST", "/concurrency_limits/", { body: { tag: "never", concurrency_limit: 0 } })
        const blocked = yield* propose(yield* task("three", ["never"]), { type: "RUNNING" }, "task_runs")
        expect(blocked).toMatchObject({
          status: "ABORT",
          details: { reason: 'The concurrency limit on tag "never" is 0 and will deadlock if the task tries to run again.' }
        })
      })
    )

    it.effect("the repossessor gives back the slots of expired leases", () =>
      Effect.gen(function* () {
        const limit = ok(yield* request("POST", "/v2/concurrency_limits/", { body: { name: "reposs", limit: 5 } }), 201)
        yield* request("POST", "/v2/concurrency_limits/increment-with-lease", { body: { names: ["reposs"], slots: 2, lease_duration: 60 } })
        yield* request("POST", "/v2/concurrency_limits/increment-with-lease", { body: { names: ["reposs"], slots: 1, lease_duration: 600 } })
        yield* TestClock.adjust(Duration.seconds(61))
        yield* repossessExpiredLeases
        expect(ok(yield* request("GET", `/v2/concurrency_limits/${limit.id}`), 200).active_slots).toBe(1)
        yield* TestClock.adjust(Duration.seconds(600))
        yield* repossessExpiredLeases
        expect(ok(yield* request("GET", `/v2/concurrency_limits/${limit.id}`), 200).active_slots).toBe(0)
      })
    )
  })
})
