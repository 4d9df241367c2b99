import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Deferred, Duration, Effect, Fiber, Layer, TestClock } from "effect"
import * as CancellationCleanup from "../../src/services/cancellation-cleanup.ts"
import { CancellationCleanupRepo } from "../../src/services/cancellation-cleanup-repo.ts"
import * as LateRuns from "../../src/services/late-runs.ts"
import { LateRunsRepo } from "../../src/services/late-runs-repo.ts"
import * as PauseExpirations from "../../src/services/pause-expirations.ts"
import { PauseExpirationsRepo } from "../../src/services/pause-expirations-repo.ts"
import { idOf, makeDeployment, makeFlow, ok } from "../support/api.ts"
import { readingRows } from "../support/rows-read.ts"
import { onServer } from "../support/database.ts"
import { request, testServer } from "../support/server.ts"

// One pass of each service, with its query repository (the server's registration provides it).
const markLateRuns = Effect.provide(LateRuns.markLateRuns, LateRunsRepo.Default)
const failExpiredPauses = Effect.provide(PauseExpirations.failExpiredPauses, PauseExpirationsRepo.Default)
const cleanUpCancellations = Effect.provide(CancellationCleanup.cleanUpCancellations, CancellationCleanupRepo.Default)

/**
 * One pass that found `found` before another replica's overlapping pass changed them: what the
 * queries answered is stale by the time the pass writes.
 */
const staleCandidates = <A, E, R>(effect: Effect.Effect<A, E, R>, found: {
  readonly paused?: ReadonlyArray<string>
  readonly tasks?: ReadonlyArray<string>
  readonly subflows?: ReadonlyArray<{ id: string; deployment_id: string | null; state_type: "RUNNING" }>
  readonly stranded?: ReadonlyArray<string>
}) =>
  effect.pipe(
    Effect.provide(Layer.succeed(PauseExpirationsRepo, PauseExpirationsRepo.make({ expiredPauses: () => Effect.succeed([...found.paused ?? []]) }))),
    Effect.provide(Layer.succeed(CancellationCleanupRepo, CancellationCleanupRepo.make({
      unfinishedTaskRuns: () => Effect.succeed([...found.tasks ?? []]),
      orphanedSubflows: () => Effect.succeed([...found.subflows ?? []]),
      scheduledWithoutDeployment: () => Effect.succeed([...found.stranded ?? []])
    })))
  )

const stateTypes = (id: string) =>
  Effect.map(request("GET", `/flow_run_states/?flow_run_id=${id}`), (res) => ok(res, 200).map((s) => s.type as string))

const createRun = (body: Record<string, unknown>) => Effect.map(request("POST", "/flow_runs/", { body }), (res) => ok(res))

const readRun = (id: string) => Effect.map(request("GET", `/flow_runs/${id}`), (res) => ok(res, 200))
const readTask = (id: string) => Effect.map(request("GET", `/task_runs/${id}`), (res) => ok(res, 200))

const setFlowState = (id: string, state: Record<string, unknown>, force = false) =>
  Effect.map(request("POST", `/flow_runs/${id}/set_state`, { body: { state, force } }), (res) => ok(res).status as string)

const setTaskState = (id: string, state: Record<string, unknown>) =>
  Effect.map(request("POST", `/task_runs/${id}/set_state`, { body: { state, force: true } }), (res) => ok(res).status as string)

const scheduledAt = (clock: number, offsetSeconds: number) => ({
  type: "SCHEDULED",
  state_details: { scheduled_time: new Date(clock + offsetSeconds * 1000).toISOString() }
})

describe("run-keeping services", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("late_runs marks runs still Scheduled after_seconds past their time Late, once", () =>
      Effect.gen(function* () {
        yield* TestClock.adjust(Duration.hours(1))
        const clock = yield* TestClock.currentTimeMillis
        const flowId = yield* makeFlow("late")
        const late = yield* createRun({ flow_id: flowId, state: scheduledAt(clock, -60) })
        const recent = yield* createRun({ flow_id: flowId, state: scheduledAt(clock, -10) })
        const future = yield* createRun({ flow_id: flowId, state: scheduledAt(clock, 60) })
        const pending = yield* createRun({ flow_id: flowId })
        yield* markLateRuns
        const marked = yield* readRun(idOf(late))
        expect(marked).toMatchObject({ state_type: "SCHEDULED", state_name: "Late" })
        expect(marked.state.state_details.scheduled_time).toBe(late.state.state_details.scheduled_time)
        expect((yield* readRun(idOf(recent))).state_name).toBe("Scheduled")
        expect((yield* readRun(idOf(future))).state_name).toBe("Scheduled")
        expect((yield* readRun(idOf(pending))).state_name).toBe("Pending")
        // Already late: no second Late state.
        yield* markLateRuns
        expect((yield* readRun(idOf(late))).state_id).toBe(marked.state_id)
        // 15 seconds past its time is late (the default after_seconds).
        yield* TestClock.adjust(Duration.seconds(6))
        yield* markLateRuns
        expect((yield* readRun(idOf(recent))).state_name).toBe("Late")
        expect((yield* request("GET", `/flow_run_states/?flow_run_id=${late.id}`)).body.map((s) => s.name)).toEqual([
          "Scheduled",
          "Late"
        ])
      })
    )

    it.effect("pause_expirations fails runs paused past their timeout", () =>
      Effect.gen(function* () {
        const clock = yield* TestClock.currentTimeMillis
        const flowId = yield* makeFlow("pauses")
        const running = () =>
          Effect.gen(function* () {
            const run = yield* createRun({ flow_id: flowId })
            yield* setFlowState(idOf(run), { type: "RUNNING" })
            return idOf(run)
          })
        const expiring = yield* running()
        const lasting = yield* running()
        const noTimeout = yield* running()
        const busy = yield* running()
        const pause = (id: string, timeoutSeconds: number | null) =>
          setFlowState(id, {
            type: "PAUSED",
            state_details: {
              pause_key: "k",
              pause_timeout: timeoutSeconds === null ? null : new Date(clock + timeoutSeconds * 1000).toISOString()
            }
          })
        expect(yield* pause(expiring, 30)).toBe("ACCEPT")
        yield* pause(lasting, 3600)
        yield* pause(noTimeout, null)
        yield* TestClock.adjust(Duration.seconds(31))
        yield* failExpiredPauses
        expect(yield* readRun(expiring)).toMatchObject({ state_type: "FAILED", state: { message: "The flow was paused and never resumed." } })
        expect((yield* readRun(lasting)).state_type).toBe("PAUSED")
        expect((yield* readRun(noTimeout)).state_type).toBe("PAUSED")
        expect((yield* readRun(busy)).state_type).toBe("RUNNING")
      })
    )

    it.effect("cancellation_cleanup cancels the unfinished task runs and subflows of a cancelled run", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("cleanup")
        const parent = yield* createRun({ flow_id: flowId })
        yield* setFlowState(idOf(parent), { type: "RUNNING" })
        const task = (key: string) =>
          Effect.map(request("POST", "/task_runs/", { body: { flow_run_id: parent.id, task_key: key, dynamic_key: "0" } }), (res) => idOf(ok(res)))
        const running = yield* task("running")
        const done = yield* task("done")
        yield* setTaskState(running, { type: "RUNNING" })
        yield* setTaskState(done, { type: "COMPLETED" })
        // Two subflows, started by tasks of the parent: one plain, one from a deployment with infrastructure.
        const dep = yield* makeDeployment({ name: "sub-dep", flow_id: flowId })
        const plainSub = yield* createRun({ flow_id: flowId, parent_task_run_id: yield* task("sub-1") })
        const depSub = ok(
          yield* request("POST", `/deployments/${dep.id}/create_flow_run`, { body: { parent_task_run_id: yield* task("sub-2") } })
        )
        yield* setFlowState(idOf(plainSub), { type: "RUNNING" })
        yield* setFlowState(idOf(depSub), { type: "RUNNING" })
        yield* request("PATCH", `/flow_runs/${depSub.id}`, { body: { infrastructure_pid: "pid-42" } })

        // While the parent runs, nothing is touched.
        yield* cleanUpCancellations
        expect((yield* readTask(running)).state_type).toBe("RUNNING")

        yield* setFlowState(idOf(parent), { type: "CANCELLED" }, true)
        yield* cleanUpCancellations
        expect(yield* readTask(running)).toMatchObject({ state_type: "CANCELLED", state: { message: "The parent flow run was cancelled." } })
        expect((yield* readTask(done)).state_type).toBe("COMPLETED")
        expect(yield* readRun(idOf(plainSub))).toMatchObject({ state_type: "CANCELLED", state: { message: "The parent flow run was cancelled." } })
        expect((yield* readRun(idOf(depSub))).state_type).toBe("CANCELLING")
        // A Cancelling deployment subflow is left for its worker.
        const cancelling = (yield* readRun(idOf(depSub))).state_id
        yield* cleanUpCancellations
        expect((yield* readRun(idOf(depSub))).state_id).toBe(cancelling)
      })
    )

    it.effect("cancellation_cleanup cancels runs still waiting for a deleted deployment", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("orphans")
        const dep = yield* makeDeployment({ name: "gone", flow_id: flowId })
        const run = ok(yield* request("POST", `/deployments/${dep.id}/create_flow_run`, { body: { state: { type: "PENDING" } } }))
        yield* setFlowState(idOf(run), { type: "RUNNING" })
        yield* setFlowState(idOf(run), { type: "SCHEDULED", name: "AwaitingRetry" }, true)
        // Deleting the deployment removes runs that never ran; this one ran before.
        yield* request("DELETE", `/deployments/${dep.id}`)
        expect((yield* readRun(idOf(run))).state_name).toBe("AwaitingRetry")
        yield* cleanUpCancellations
        expect(yield* readRun(idOf(run))).toMatchObject({
          state_type: "CANCELLED",
          state: { message: "The deployment of this flow run was deleted." }
        })
      })
    )

    it.effect("pause_expirations after another replica's overlapping pass fails each run once; a run resumed meanwhile stays as it is", () =>
      Effect.gen(function* () {
        const clock = yield* TestClock.currentTimeMillis
        const flowId = yield* makeFlow("pauses-twice")
        const paused = (timeoutSeconds: number) =>
          Effect.gen(function* () {
            const id = idOf(yield* createRun({ flow_id: flowId }))
            yield* setFlowState(id, { type: "RUNNING" })
            yield* setFlowState(id, {
              type: "PAUSED",
              state_details: { pause_key: "k", pause_timeout: new Date(clock + timeoutSeconds * 1000).toISOString() }
            })
            return id
          })
        const expired = yield* paused(30)
        const resumed = yield* paused(30)
        yield* TestClock.adjust(Duration.seconds(31))
        // Another replica's pass failed `expired`; `resumed` was resumed and paused again, with a new timeout.
        yield* failExpiredPauses
        yield* setFlowState(resumed, { type: "RUNNING" }, true)
        const clockNow = yield* TestClock.currentTimeMillis
        yield* setFlowState(resumed, { type: "PAUSED", state_details: { pause_key: "k2", pause_timeout: new Date(clockNow + 600_000).toISOString() } })
        // This replica's pass found both before that.
        yield* staleCandidates(PauseExpirations.failExpiredPauses, { paused: [expired, resumed] })
        expect(yield* stateTypes(expired)).toEqual(["PENDING", "RUNNING", "PAUSED", "FAILED"])
        expect((yield* readRun(resumed)).state_type).toBe("PAUSED")
      })
    )

    it.effect("cancellation_cleanup after another replica's overlapping pass cancels each run once", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("cleanup-twice")
        const parent = yield* createRun({ flow_id: flowId })
        yield* setFlowState(idOf(parent), { type: "RUNNING" })
        const task = idOf(ok(yield* request("POST", "/task_runs/", { body: { flow_run_id: parent.id, task_key: "t", dynamic_key: "0" } })))
        yield* setTaskState(task, { type: "RUNNING" })
        const sub = yield* createRun({ flow_id: flowId, parent_task_run_id: idOf(ok(yield* request("POST", "/task_runs/", { body: { flow_run_id: parent.id, task_key: "s", dynamic_key: "0" } }))) })
        yield* setFlowState(idOf(sub), { type: "RUNNING" })
        const dep = yield* makeDeployment({ name: "gone-twice", flow_id: flowId })
        const stranded = ok(yield* request("POST", `/deployments/${dep.id}/create_flow_run`, { body: { state: { type: "PENDING" } } }))
        yield* setFlowState(idOf(stranded), { type: "RUNNING" })
        yield* setFlowState(idOf(stranded), { type: "SCHEDULED", name: "AwaitingRetry" }, true)
        yield* request("DELETE", `/deployments/${dep.id}`)
        yield* setFlowState(idOf(parent), { type: "CANCELLED" }, true)

        yield* cleanUpCancellations
        yield* staleCandidates(CancellationCleanup.cleanUpCancellations, {
          tasks: [task],
          subflows: [{ id: idOf(sub), deployment_id: null, state_type: "RUNNING" }],
          stranded: [idOf(stranded)]
        })
        const taskStates = ok(yield* request("GET", `/task_run_states/?task_run_id=${task}`), 200).map((s) => s.type as string)
        expect(taskStates.filter((type) => type === "CANCELLED")).toHaveLength(1)
        expect(taskStates.at(-1)).toBe("CANCELLED")
        expect(yield* stateTypes(idOf(sub))).toEqual(["PENDING", "RUNNING", "CANCELLED"])
        expect(yield* stateTypes(idOf(stranded))).toEqual(["PENDING", "RUNNING", "SCHEDULED", "CANCELLED"])
      })
    )

    it.effect("cancellation_cleanup finds the runs of a deleted deployment without reading 3,000 other waiting runs", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const flowId = yield* makeFlow("many-waiting")
        const live = yield* makeDeployment({ name: "live", flow_id: flowId })
        const gone = crypto.randomUUID()
        // 3,000 runs waiting a day ahead for a live deployment, two for one that was deleted.
        yield* sql`
          INSERT INTO flow_run (id, created, updated, name, flow_id, deployment_id, state_type, state_name,
            expected_start_time, next_scheduled_start_time)
          SELECT gen_random_uuid(), now(), now(), 'waiting-' || i, ${flowId}::uuid,
            CASE WHEN i <= 2 THEN ${gone}::uuid ELSE ${live.id}::uuid END, 'SCHEDULED', 'Scheduled',
            now() + interval '1 day', now() + interval '1 day'
          FROM generate_series(1, 3002) i
        `
        yield* sql`ANALYZE flow_run`
        const looked = yield* readingRows("flow_run", Effect.provide(
          Effect.flatMap(CancellationCleanupRepo, (repo) => repo.scheduledWithoutDeployment(100)),
          CancellationCleanupRepo.Default
        ))
        yield* sql`DELETE FROM flow_run WHERE flow_id = ${flowId}`
        expect(looked.result).toHaveLength(2)
        // Two deployments stepped through, the deleted one's two runs read: a few rows, not 3,000.
        expect(looked.read).toBeLessThan(50)
      })
    )

    // Two connections at once: the embedded database serves one.
    it.effect.skipIf(!onServer())("a pass skips a run another transaction holds, without waiting for it, and takes it next time", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const clock = yield* TestClock.currentTimeMillis
        const flowId = yield* makeFlow("held")
        const paused = () =>
          Effect.gen(function* () {
            const id = idOf(yield* createRun({ flow_id: flowId }))
            yield* setFlowState(id, { type: "RUNNING" })
            yield* setFlowState(id, { type: "PAUSED", state_details: { pause_key: "k", pause_timeout: new Date(clock + 30_000).toISOString() } })
            return id
          })
        const held = yield* paused()
        const free = yield* paused()
        yield* TestClock.adjust(Duration.seconds(31))
        // Another process's transaction holds `held` until told to let go.
        const locked = yield* Deferred.make<void>()
        const letGo = yield* Deferred.make<void>()
        const holder = yield* sql.withTransaction(
          Effect.zipRight(sql`SELECT id FROM flow_run WHERE id = ${held} FOR UPDATE`, Effect.zipRight(Deferred.succeed(locked, undefined), Deferred.await(letGo)))
        ).pipe(Effect.fork)
        yield* Deferred.await(locked)
        // Real seconds: the pass would wait on the row lock, not on the clock.
        const realSeconds = (n: number) => Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, n * 1000)))
        const finished = yield* Effect.race(Effect.as(failExpiredPauses, true), Effect.as(realSeconds(10), false))
        yield* Deferred.succeed(letGo, undefined)
        yield* Fiber.join(holder)
        expect(finished).toBe(true)
        expect((yield* readRun(free)).state_type).toBe("FAILED")
        expect((yield* readRun(held)).state_type).toBe("PAUSED")
        yield* failExpiredPauses
        expect((yield* readRun(held)).state_type).toBe("FAILED")
      })
    )
  })
})
