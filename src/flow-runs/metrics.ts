/**
 * Flow runs by state type for the metrics (`baton_flow_runs`): the types a run passes through
 * (Scheduled, Pending, Running, Paused, Cancelling), counted by the database when a scrape finds
 * the last count older than FLOW_RUNS_TTL. The final types are left out: runs pile up there until
 * the vacuum deletes them, so counting them would cost more with every run kept, on every refresh.
 */
import { Effect, Layer } from "effect"
import { ACTIVE_STATE_TYPES, Metrics } from "../http/metrics-registry.ts"
import { FlowRunsRepo } from "./repo.ts"

export const FlowRunMetricsLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const metrics = yield* Metrics
    const repo = yield* FlowRunsRepo
    yield* metrics.flowRuns(repo.countByStateType(ACTIVE_STATE_TYPES))
  })
).pipe(Layer.provide([Metrics.Default, FlowRunsRepo.Default]))
