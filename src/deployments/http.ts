import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { paginate, resolveLimit } from "../domain/pagination.ts"
import { flowRunJson } from "../flow-runs/wire.ts"
import { BatonApi } from "../api.ts"
import { DeploymentsRepo } from "./repo.ts"
import { DeploymentRuns } from "./runs.ts"
import { Deployment } from "./schemas.ts"
import { DeploymentNotFound } from "./errors.ts"
import { Deployments } from "./service.ts"
import { createdOrFound, jsonTextCreatedOrFound } from "../http/responses.ts"
import { orFail } from "../domain/errors.ts"

export const DeploymentsLive = apiGroup(BatonApi, "deployments", (handlers) =>
  Effect.gen(function* () {
    const deployments = yield* Deployments
    const runs = yield* DeploymentRuns
    const repo = yield* DeploymentsRepo
    return handlers
      .handle("create", ({ payload }) =>
        Effect.flatMap(deployments.create(payload), ({ deployment, created }) => createdOrFound(Deployment, deployment, created))
      )
      .handle("read", ({ path }) => deployments.read(path.id))
      .handle("readByName", ({ path }) =>
        repo.findByName(path.flow_name, path.deployment_name).pipe(orFail(() => new DeploymentNotFound()))
      )
      .handle("update", ({ path, payload }) => deployments.update(path.id, payload))
      .handle("delete", ({ path }) => deployments.remove(path.id))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          repo.filter({ query: payload, sort: payload.sort, offset: payload.offset, limit })
        )
      )
      .handle("paginate", ({ payload }) =>
        paginate(payload, (limit, offset) => repo.filter({ query: payload, sort: payload.sort, offset, limit }), repo.count(payload))
      )
      .handle("count", ({ payload }) => repo.count(payload))
      .handle("bulkDelete", ({ payload }) =>
        Effect.map(deployments.removeMatching(payload.deployments, payload.limit), (deleted) => ({ deleted }))
      )
      .handle("scheduledFlowRuns", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) => runs.scheduledFlowRuns(payload.deployment_ids, payload.scheduled_before, limit))
      )
      .handle("schedule", ({ path, payload }) =>
        Effect.as(
          runs.scheduleRuns(path.id, {
            start: payload.start_time,
            end: payload.end_time,
            minTimeSeconds: payload.min_time,
            minRuns: payload.min_runs,
            maxRuns: payload.max_runs
          }),
          null
        )
      )
      .handle("pause", ({ path }) => Effect.as(deployments.pause(path.id), null))
      .handle("resume", ({ path }) => Effect.as(deployments.resume(path.id), null))
      .handle("createFlowRun", ({ path, payload }) =>
        Effect.map(runs.createFlowRun(path.id, payload), ({ run, created }) => jsonTextCreatedOrFound(flowRunJson(run), created))
      )
      .handle("createFlowRuns", ({ path, payload }) => runs.createFlowRuns(path.id, payload))
      .handle("workQueueCheck", ({ path }) => runs.workQueueCheck(path.id))
      .handle("listSchedules", ({ path }) => deployments.listSchedules(path.id))
      .handle("createSchedules", ({ path, payload }) => deployments.createSchedules(path.id, payload))
      .handle("updateSchedule", ({ path, payload }) => deployments.updateSchedule(path.id, path.schedule_id, payload))
      .handle("deleteSchedule", ({ path }) => deployments.deleteSchedule(path.id, path.schedule_id))
  })
).pipe(Layer.provide([DeploymentRuns.Default, Deployments.Default, DeploymentsRepo.Default]))
