import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { isIntegrityViolation } from "../database/errors.ts"
import { generateName } from "../domain/names.ts"
import { paginate, resolveLimit } from "../domain/pagination.ts"
import { historyWindow } from "../orchestration/repo.ts"
import { emptyStateDetails } from "../domain/states.ts"
import { OrchestrationResult } from "../flow-runs/schemas.ts"
import { BatonApi } from "../api.ts"
import { integrityConflict, NotFound } from "../domain/errors.ts"
import { TaskRunsRepo } from "./repo.ts"
import { TaskRun } from "./schemas.ts"
import { createdOrFound } from "../http/responses.ts"

// The reference says "Task not found" when reading or deleting, "Task run not found" when renaming.
const taskNotFound = new NotFound({ detail: "Task not found" })
const taskRunNotFound = new NotFound({ detail: "Task run not found" })

export const TaskRunsLive = HttpApiBuilder.group(BatonApi, "taskRuns", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* TaskRunsRepo
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const result = yield* runs.create({
            ...payload,
            name: payload.name ?? (yield* generateName),
            // A task run created without a state starts Pending.
            state: payload.state ?? { type: "PENDING", name: null, message: null, data: null, state_details: emptyStateDetails }
          }).pipe(
            // A client-chosen id that another task run already has (or a flow run deleted meanwhile).
            Effect.catchIf(isIntegrityViolation, () => Effect.fail(integrityConflict())),
            Effect.catchTag("SqlError", Effect.die)
          )
          // A flow run id that names no flow run.
          if (result === undefined) return yield* integrityConflict()
          return yield* createdOrFound(TaskRun, result.run, result.created)
        })
      )
      .handle("read", ({ path }) =>
        Effect.flatMap(Effect.orDie(runs.read(path.id)), (run) => (run === undefined ? taskNotFound : Effect.succeed(run)))
      )
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(Effect.orDie(runs.update(path.id, payload)), (updated) => (updated ? Effect.void : taskRunNotFound))
      )
      .handle("delete", ({ path }) =>
        Effect.flatMap(Effect.orDie(runs.remove(path.id)), (deleted) => (deleted ? Effect.void : taskNotFound))
      )
      .handle("count", ({ payload }) => Effect.orDie(runs.count(payload)))
      .handle("history", ({ payload }) =>
        Effect.flatMap(historyWindow(payload), (window) => Effect.orDie(runs.history(payload, window)))
      )
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) => Effect.orDie(runs.filter({ ...payload, limit })))
      )
      .handle("paginate", ({ payload }) =>
        paginate(payload, (limit, offset) => runs.filter({ ...payload, limit, offset }), runs.count(payload))
      )
      .handle("setState", ({ path, payload }) =>
        Effect.gen(function* () {
          const result = yield* Effect.orDie(runs.setState(path.id, payload.state, payload.force))
          if (result === undefined) return yield* taskRunNotFound
          const { created, ...answer } = result
          return yield* createdOrFound(OrchestrationResult, answer, created)
        })
      )
  })
)

export const TaskRunStatesLive = HttpApiBuilder.group(BatonApi, "taskRunStates", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* TaskRunsRepo
    return handlers
      .handle("read", ({ path }) =>
        Effect.flatMap(Effect.orDie(runs.readState(path.id)), (state) =>
          state === undefined ? new NotFound({ detail: "Task run state not found" }) : Effect.succeed(state)
        )
      )
      .handle("list", ({ urlParams }) => Effect.orDie(runs.readStates(urlParams.task_run_id)))
  })
)
