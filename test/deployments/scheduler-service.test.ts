import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { DeploymentScheduler } from "../../src/deployments/scheduler.ts"
import { runBackgroundServices } from "../../src/services/registry.ts"
import { makeFlow, makeDeployment, runsOf } from "../support/api.ts"
import { buildInServer, request, testServer } from "../support/server.ts"
import { eventually } from "../support/eventually.ts"

const HOUR = 3600

/** Real time for a background fiber's queries to finish after the TestClock moved it. */
const settle = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 300)))

const scheduleDue = Effect.flatMap(DeploymentScheduler, (s) => s.scheduleDue)

// Its own file: these settings build their own server (layers are shared within a file).
describe("the scheduler with small batches, and as a service", () => {
  it.layer(
    testServer({
      overrides: {
        "server.services.scheduler.insert_batch_size": 7,
        "server.services.scheduler.deployment_batch_size": 3
      }
    }),
    { timeout: 60_000 }
  )((it) => {
    it.effect("pages through deployments and inserts in batches", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("sched-batches")
        for (let i = 0; i < 10; i++) {
          yield* makeDeployment({ name: `b${i}`, flow_id: flowId, schedules: [{ schedule: { interval: HOUR } }] })
        }
        expect(yield* scheduleDue).toBe(30)
        expect(yield* scheduleDue).toBe(0)
        expect(yield* runsOf(flowId)).toHaveLength(30)
      })
    )

    it.effect("a new deployment with a 60 s interval has its runs within one quick loop", () =>
      Effect.scoped(
        Effect.gen(function* () {
          yield* buildInServer(runBackgroundServices((s) => s.name === "scheduler"))
          yield* TestClock.adjust(Duration.millis(1))
          yield* settle
          const flowId = yield* makeFlow("sched-minutely")
          yield* makeDeployment({ name: "minutely", flow_id: flowId, schedules: [{ schedule: { interval: 60 } }] })
          yield* TestClock.adjust(Duration.seconds(5))
          // min_runs 3 .. max_runs 100, and at most deployment_schedule_max_scheduled_runs (50) ahead.
          yield* eventually(Effect.map(runsOf(flowId), (runs) => expect(runs).toHaveLength(50)))
          yield* settle
          expect(yield* runsOf(flowId)).toHaveLength(50)
        })
      )
    )

    it.effect("runs as a background service: the main loop at once, then every loop_seconds", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const flowId = yield* makeFlow("sched-service")
          yield* makeDeployment({ name: "svc", flow_id: flowId, schedules: [{ schedule: { interval: HOUR } }] })
          // Older than the quick loop's window: only the main loop serves it.
          yield* TestClock.adjust(Duration.seconds(10))
          yield* buildInServer(runBackgroundServices((s) => s.name === "scheduler"))
          yield* TestClock.adjust(Duration.millis(1))
          const first = yield* eventually(Effect.map(runsOf(flowId), (runs) => {
            expect(runs).toHaveLength(3)
            return runs
          }))
          for (const run of first) yield* request("DELETE", `/flow_runs/${run.id}`)
          yield* TestClock.adjust(Duration.seconds(30))
          yield* settle
          expect(yield* runsOf(flowId)).toEqual([])
          yield* TestClock.adjust(Duration.seconds(31))
          const again = yield* eventually(Effect.map(runsOf(flowId), (runs) => {
            expect(runs).toHaveLength(3)
            return runs
          }))
          // The same slots, scheduled again under the same keys.
          expect(again.map((r) => r.idempotency_key).sort()).toEqual(first.map((r) => r.idempotency_key).sort())
        })
      )
    )
  })
})
