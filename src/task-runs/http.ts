import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { generateName } from "../domain/names.ts"
import { paginate, resolveLimit } from "../domain/pagination.ts"
import { Orchestrator } from "../orchestration/orchestrator.ts"
import { historyWindow } from "../orchestration/history.ts"
import { emptyStateDetails } from "../domain/states.ts"
import { OrchestrationResult } from "../flow-runs/schemas.ts"
import { BatonApi } from "../api.ts"
import { orFail } from "../domain/errors.ts"
import { TaskNotFound, TaskRunNotFound, TaskRunStateNotFound } from "./errors.ts"
import { TaskRunsRepo } from "./repo.ts"
import { TaskRun } from "./schemas.ts"
import { createdOrFound } from "../http/responses.ts"


export const TaskRunsLive = apiGroup(BatonApi, "taskRuns", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* TaskRunsRepo
    const orchestrator = yield* Orchestrator
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const result = yield* runs.create({
            ...payload,
            name: payload.name ?? (yield* generateName),
            // A task run created without a state starts Pending.
            state: payload.state ?? { type: "PENDING", name: null, message: null, data: null, state_details: emptyStateDetails }
          })
          return yield* createdOrFound(TaskRun, result.run, result.created)
        })
      )
      .handle("read", ({ path }) =>
        runs.find(path.id).pipe(orFail(() => new TaskNotFound()))
      )
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(runs.update(path.id, payload), (updated) => (updated ? Effect.void : new TaskRunNotFound()))
      )
      .handle("delete", ({ path }) =>
        Effect.flatMap(runs.remove(path.id), (deleted) => (deleted ? Effect.void : new TaskNotFound()))
      )
      .handle("count", ({ payload }) => runs.count(payload))
      .handle("history", ({ payload }) =>
        Effect.flatMap(historyWindow(payload), (window) => runs.history(payload, window))
      )
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) => runs.filter({ ...payload, limit }))
      )
      .handle("paginate", ({ payload }) =>
        paginate(payload, (limit, offset) => runs.filter({ ...payload, limit, offset }), runs.count(payload))
      )
      .handle("setState", ({ path, payload }) =>
        Effect.gen(function* () {
          const result = yield* orchestrator.setTaskRunState(path.id, payload.state, payload.force).pipe(
            orFail(() => new TaskRunNotFound())
          )
          const { created, ...answer } = result
          return yield* createdOrFound(OrchestrationResult, answer, created)
        })
      )
  })
).pipe(Layer.provide([Orchestrator.Default, TaskRunsRepo.Default]))

export const TaskRunStatesLive = apiGroup(BatonApi, "taskRunStates", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* TaskRunsRepo
    return handlers
      .handle("read", ({ path }) =>
        runs.findState(path.id).pipe(orFail(() => new TaskRunStateNotFound()))
      )
      .handle("list", ({ urlParams }) => runs.readStates(urlParams.task_run_id))
  })
).pipe(Layer.provide(TaskRunsRepo.Default))
