import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { checkValues, prepareSchema, schemaProblem } from "../domain/schema-validation.ts"
import { now } from "../domain/time.ts"
import { BatonApi } from "../api.ts"
import { orFail, ValidationError } from "../domain/errors.ts"
import { UiTaskRunNotFound } from "./errors.ts"
import { TaskRunsRepo } from "../task-runs/repo.ts"
import { Hydration } from "../variables/hydration.ts"
import { DASHBOARD_BUCKETS, dashboardBuckets } from "./buckets.ts"
import { TERMINAL_STATES, UiRepo } from "./repo.ts"

/** Answers keyed by id as the reference writes them: each id asked for once, lower case, in order. */
const byId = <A>(ids: ReadonlyArray<string>, found: ReadonlyMap<string, A>, missing: A): Record<string, A> =>
  Object.fromEntries(ids.map((id) => id.toLowerCase()).map((id) => [id, found.get(id) ?? missing]))

export const UiFlowsLive = apiGroup(BatonApi, "uiFlows", (handlers) =>
  Effect.gen(function* () {
    const ui = yield* UiRepo
    return handlers
      .handle("countDeployments", ({ payload }) =>
        Effect.map(ui.deploymentsPerFlow(payload.flow_ids), (counts) => byId(payload.flow_ids, counts, 0))
      )
      .handle("nextRuns", ({ payload }) =>
        Effect.map(ui.nextRunPerFlow(payload.flow_ids), (runs) => byId(payload.flow_ids, runs, null))
      )
  })
).pipe(Layer.provide(UiRepo.Default))

export const UiFlowRunsLive = apiGroup(BatonApi, "uiFlowRuns", (handlers) =>
  Effect.gen(function* () {
    const ui = yield* UiRepo
    return handlers
      .handle("history", ({ payload }) => ui.simpleFlowRuns(payload))
      .handle("countTaskRuns", ({ payload }) =>
        Effect.map(ui.taskRunsPerFlowRun(payload.flow_run_ids), (counts) => byId(payload.flow_run_ids, counts, 0))
      )
  })
).pipe(Layer.provide(UiRepo.Default))

export const UiTaskRunsLive = apiGroup(BatonApi, "uiTaskRuns", (handlers) =>
  Effect.gen(function* () {
    const ui = yield* UiRepo
    const taskRuns = yield* TaskRunsRepo
    return handlers
      .handle("dashboardCounts", ({ payload }) =>
        Effect.gen(function* () {
          const startTime = payload.task_runs.start_time
          if (startTime?.after_ == null) {
            return yield* new ValidationError({ detail: "task_runs.start_time.after_ is required" })
          }
          const buckets = dashboardBuckets(startTime.after_, startTime.before_ ?? undefined, yield* now)
          if (buckets === undefined) return Array.from({ length: DASHBOARD_BUCKETS }, () => ({ completed: 0, failed: 0 }))
          // Only task runs in a final state count, whatever state the filter asks for.
          const taskRunFilter = { ...payload.task_runs, state: { operator: "and_" as const, type: { any_: TERMINAL_STATES } } }
          return yield* ui.taskRunCountsPerBucket({ ...payload, task_runs: taskRunFilter }, buckets)
        })
      )
      .handle("countByState", ({ payload }) => ui.taskRunCountsByState(payload))
      .handle("read", ({ path }) =>
        taskRuns.findWithFlowRunName(path.id).pipe(orFail(() => new UiTaskRunNotFound()))
      )
  })
).pipe(Layer.provide([TaskRunsRepo.Default, UiRepo.Default]))

export const UiSchemasLive = apiGroup(BatonApi, "uiSchemas", (handlers) =>
  Effect.gen(function* () {
    const hydration = yield* Hydration
    return handlers.handle("validate", ({ payload }) =>
      Effect.gen(function* () {
        const schema = prepareSchema(payload.schema)
        const problem = schemaProblem(schema)
        if (problem !== undefined) return yield* new ValidationError({ detail: problem })
        // Workspace variables are filled in; templates are only checked.
        const values = yield* hydration.hydrateForCheck(payload.values)
        const checked = checkValues(schema, values)
        if (checked._tag === "InvalidSchema") return yield* new ValidationError({ detail: checked.detail })
        return { errors: checked.errors, valid: checked.valid }
      })
    )
  })
).pipe(Layer.provide(Hydration.Default))
