import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { DeploymentScheduler } from "../../src/deployments/scheduler.ts"
import { ok, makeFlow, makeDeployment, runsOf } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const HOUR = 3600

const scheduleDue = Effect.flatMap(DeploymentScheduler, (s) => s.scheduleDue)
const scheduleRecent = Effect.flatMap(DeploymentScheduler, (s) => s.scheduleRecent)

describe("the scheduler", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("gives each active schedule of an unpaused deployment its next runs, once", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("sched-active")
        const dep = ok(
          yield* request("POST", "/deployments/", {
            body: {
              name: "active",
              flow_id: flowId,
              parameters: { x: 11 },
              tags: ["t"],
              schedules: [
                { schedule: { interval: HOUR }, parameters: { who: "hourly" } },
                { schedule: { interval: 2 * HOUR }, parameters: { who: "two-hourly" } },
                { schedule: { interval: 4 * HOUR }, active: false }
              ]
            }
          })
        )
        const idle = yield* makeFlow("sched-idle")
        yield* makeDeployment({ name: "inactive", flow_id: idle, schedules: [{ schedule: { interval: HOUR }, active: false }] })
        yield* makeDeployment({ name: "none", flow_id: idle })
        // The scheduler runs a moment after a schedule is made, so its first run is one interval on.
        yield* TestClock.adjust(Duration.seconds(1))
        yield* scheduleDue
        const runs = yield* runsOf(flowId)
        expect(runs).toHaveLength(6)
        expect(yield* runsOf(idle)).toEqual([])
        const anchor = Date.parse(dep.schedules.find((s) => s.schedule.interval === HOUR)!.schedule.anchor_date as string)
        const hourly = runs.filter((r) => r.parameters.who === "hourly")
        expect(hourly.map((r) => Date.parse(r.expected_start_time as string) - anchor)).toEqual([1, 2, 3].map((h) => h * HOUR * 1000))
        for (const run of runs) {
          expect(run).toMatchObject({
            state_type: "SCHEDULED",
            state_name: "Scheduled",
            auto_scheduled: true,
            deployment_id: dep.id,
            tags: ["auto-scheduled", "t"],
            parameters: { x: 11 }
          })
          expect(run.next_scheduled_start_time).toBe(run.expected_start_time)
          expect(run.state.state_details.scheduled_time).toBe(run.expected_start_time)
          expect(run.state.message).toBe("Flow run scheduled")
          expect(run.created_by.type).toBe("SCHEDULE")
          expect(run.idempotency_key).toMatch(new RegExp(`^scheduled ${dep.id} ${run.created_by.id} \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d`))
        }
        // Enough runs ahead: nothing more. A cancelled run is not scheduled again.
        yield* scheduleDue
        expect(yield* runsOf(flowId)).toHaveLength(6)
        const cancel = yield* request("POST", `/flow_runs/${hourly[0].id}/set_state`, { body: { state: { type: "CANCELLED" }, force: true } })
        expect(cancel.body.status).toBe("ACCEPT")
        yield* scheduleDue
        const after = yield* runsOf(flowId)
        expect(after).toHaveLength(6)
        expect(after.filter((r) => r.state_type === "CANCELLED")).toHaveLength(1)
      })
    )

    it.effect("never creates a run twice, with several scheduler loops at once", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("sched-race")
        yield* makeDeployment({
          name: "race",
          flow_id: flowId,
          schedules: [{ schedule: { interval: 60 }, max_scheduled_runs: 20 }, { schedule: { interval: 600 } }]
        })
        yield* TestClock.adjust(Duration.seconds(1))
        yield* Effect.all([scheduleDue, scheduleDue, scheduleRecent, scheduleDue], { concurrency: "unbounded" })
        const runs = yield* runsOf(flowId)
        // 20 minutely runs (the schedule's own cap), and ten-minutely ones until one is an hour ahead.
        expect(runs).toHaveLength(20 + 7)
        expect(new Set(runs.map((r) => r.idempotency_key)).size).toBe(runs.length)
      })
    )

    it.effect("schedules nothing for a paused deployment, and pausing removes its waiting auto-scheduled runs", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("sched-paused")
        const paused = yield* makeDeployment({ name: "p", flow_id: flowId, paused: true, schedules: [{ schedule: { interval: HOUR } }] })
        yield* scheduleDue
        expect(yield* runsOf(flowId)).toEqual([])

        yield* request("POST", `/deployments/${paused.id}/resume_deployment`)
        yield* scheduleRecent
        expect(yield* runsOf(flowId)).toHaveLength(3)
        const manual = ok(yield* request("POST", `/deployments/${paused.id}/create_flow_run`, {}))
        yield* request("POST", `/deployments/${paused.id}/pause_deployment`)
        expect((yield* runsOf(flowId)).map((r) => r.id)).toEqual([manual.id])
        // Deleting the deployment takes the manual Scheduled run too.
        yield* request("DELETE", `/deployments/${paused.id}`)
        expect(yield* runsOf(flowId)).toEqual([])
      })
    )

    it.effect("changing a deployment's schedules replaces its future auto-scheduled runs", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("sched-change")
        const dep = yield* makeDeployment({ name: "c", flow_id: flowId, schedules: [{ schedule: { interval: HOUR }, slug: "h" }] })
        yield* TestClock.adjust(Duration.seconds(1))
        yield* scheduleDue
        const first = yield* runsOf(flowId)
        expect(first).toHaveLength(3)
        // A running run is no longer waiting: it stays.
        yield* request("POST", `/flow_runs/${first[0].id}/set_state`, { body: { state: { type: "RUNNING" }, force: true } })
        yield* request("PATCH", `/deployments/${dep.id}`, { body: { schedules: [{ slug: "h", schedule: { interval: 2 * HOUR } }] } })
        expect((yield* runsOf(flowId)).map((r) => r.id)).toEqual([first[0].id])
        yield* TestClock.adjust(Duration.seconds(1))
        yield* scheduleDue
        const runs = yield* runsOf(flowId)
        expect(runs).toHaveLength(4)
        const gaps = runs.slice(1).map((r) => Date.parse(r.expected_start_time as string))
        expect(gaps[1]! - gaps[0]!).toBe(2 * HOUR * 1000)
        // Turning the schedule off through its own route removes its runs.
        const scheduleId = ok(yield* request("GET", `/deployments/${dep.id}/schedules`), 200)[0].id
        yield* request("PATCH", `/deployments/${dep.id}/schedules/${scheduleId}`, { body: { active: false } })
        expect(yield* runsOf(flowId)).toHaveLength(1)
        yield* scheduleDue
        expect(yield* runsOf(flowId)).toHaveLength(1)
      })
    )

    it.effect("a deployment is due again when one of its schedules runs short", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("sched-short")
        yield* makeDeployment({
          name: "multi",
          flow_id: flowId,
          schedules: [{ schedule: { interval: 15 * 60 } }, { schedule: { interval: 6 * HOUR } }]
        })
        yield* TestClock.adjust(Duration.seconds(1))
        yield* scheduleDue
        // 15 minutes: on until one run is an hour out (5 runs); 6 hours: 3 runs.
        const runs = yield* runsOf(flowId)
        expect(runs).toHaveLength(8)
        expect(yield* scheduleDue).toBe(0)
        // An hour later the 15-minute schedule's runs are in the past: it needs more.
        yield* TestClock.adjust(Duration.hours(1))
        expect(yield* scheduleDue).toBeGreaterThan(0)
      })
    )

    it.effect("the quick loop schedules deployments changed within its interval only", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("sched-recent")
        yield* makeDeployment({ name: "r", flow_id: flowId, schedules: [{ schedule: { interval: HOUR } }] })
        yield* TestClock.adjust(Duration.seconds(10))
        yield* scheduleRecent
        expect(yield* runsOf(flowId)).toEqual([])
        const other = yield* makeFlow("sched-recent-2")
        yield* makeDeployment({ name: "r2", flow_id: other, schedules: [{ schedule: { interval: HOUR } }] })
        yield* scheduleRecent
        expect(yield* runsOf(other)).toHaveLength(3)
      })
    )

    it.effect("POST /deployments/{id}/schedule fills a window now, backfills included", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("sched-window")
        const dep = yield* makeDeployment({ name: "w", flow_id: flowId, paused: true, schedules: [{ schedule: { interval: 86_400 } }] })
        yield* TestClock.adjust(Duration.seconds(1))
        const res = yield* request("POST", `/deployments/${dep.id}/schedule`, { body: { min_runs: 5 } })
        expect(res.status).toBe(200)
        expect(res.body).toBeNull()
        expect(yield* runsOf(flowId)).toHaveLength(5)
        const clock = yield* TestClock.currentTimeMillis
        const day = 86_400_000
        yield* request("POST", `/deployments/${dep.id}/schedule`, {
          body: { start_time: new Date(clock + 100 * day).toISOString(), end_time: new Date(clock + 107 * day).toISOString(), min_runs: 100 }
        })
        expect(yield* runsOf(flowId)).toHaveLength(12)
        expect((yield* request("POST", "/deployments/00000000-0000-4000-8000-000000000000/schedule", { body: {} })).status).toBe(200)
        // A window in the year 1, long before the schedule's anchor: answered at once.
        const early = yield* request("POST", `/deployments/${dep.id}/schedule`, {
          body: { start_time: "0001-01-01T00:00:00Z", end_time: "0001-01-03T00:00:00Z", min_runs: 1 }
        })
        expect(early.status).toBe(200)
        const runs = yield* runsOf(flowId)
        expect(runs).toHaveLength(13)
        expect(runs[0].expected_start_time).toMatch(/^0001-01-0[12]T/)
        // Before the year 1: the reference cannot read such a date either.
        const before = yield* request("POST", `/deployments/${dep.id}/schedule`, { body: { start_time: "-000001-01-01T00:00:00Z" } })
        expect(before.status).toBe(422)
        expect(before.body.detail[0]).toMatchObject({ loc: ["body", "start_time"], type: "datetime_parsing" })
      })
    )
  })
})
