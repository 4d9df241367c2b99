import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Stream } from "effect"
import { generateName } from "../domain/names.ts"
import { checkParameterSize } from "../domain/parameters.ts"
import { emptyStateDetails } from "../domain/states.ts"
import { paginate, resolveLimit } from "../domain/pagination.ts"
import { historyWindow } from "../orchestration/repo.ts"
import { FlowsRepo } from "../flows/repo.ts"
import { BatonApi } from "../api.ts"
import { BadRequest, Conflict, integrityConflict, NotFound, orFail, ValidationError } from "../domain/errors.ts"
import { Settings } from "../settings/settings.ts"
import { contentDisposition, CSV_HEADER, csvRows } from "../logs/csv.ts"
import { LogsRepo } from "../logs/repo.ts"
import { ArtifactsRepo } from "../artifacts/repo.ts"
import { TaskRunsRepo } from "../task-runs/repo.ts"
import { WorkQueueLookup } from "../work-pools/queue-lookup.ts"
import { checkJobVariables, describeFailure } from "../work-pools/job-variables.ts"
import { DeploymentsRepo } from "../deployments/repo.ts"
import { dependencies, nodeGraph } from "./graph.ts"
import { FlowRunsRepo } from "./repo.ts"
import { FlowRunResume } from "./resume.ts"
import { flowRunsJson } from "./wire.ts"
import { FlowRun, type FlowRunCreate, OrchestrationResult } from "./schemas.ts"
import { createdOrFound } from "../http/responses.ts"

const flowRunNotFound = new NotFound({ detail: "Flow run not found" })

/** Logs read per page of a download. */
const LOG_PAGE = 1000
const flowRunInputNotFound = new NotFound({ detail: "Flow run input not found" })


export const FlowRunsLive = HttpApiBuilder.group(BatonApi, "flowRuns", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* FlowRunsRepo
    const deployments = yield* DeploymentsRepo
    const flows = yield* FlowsRepo
    const taskRuns = yield* TaskRunsRepo
    const settings = yield* Settings
    const logs = yield* LogsRepo
    const artifacts = yield* ArtifactsRepo
    const queues = yield* WorkQueueLookup
    const resumer = yield* FlowRunResume

    const maxParameterSize = settings.server.api.max_parameter_size

    const create = (payload: FlowRunCreate) =>
      Effect.gen(function* () {
        yield* checkParameterSize(payload.parameters, maxParameterSize)
        // A pool (and queue) named here must exist: the run goes to that queue, or the pool's default one.
        const queue = payload.work_pool_name === null
          ? null
          : payload.work_queue_name
          ? yield* queues.queueInPool(payload.work_pool_name, payload.work_queue_name)
          : yield* queues.defaultQueue(payload.work_pool_name)
        const flow = yield* flows.find(payload.flow_id).pipe(orFail(integrityConflict))
        const { id, created } = yield* Effect.orDie(
          runs.create({
            ...payload,
            name: payload.name ?? (yield* generateName),
            work_queue_id: queue?.id ?? null,
            // The run's labels: its flow's, the flow id, then the caller's.
            labels: { ...flow.labels, "prefect.flow.id": flow.id, ...payload.labels },
            // A run created without a state starts Pending.
            state: payload.state ?? { type: "PENDING", name: null, message: null, data: null, state_details: emptyStateDetails }
          })
        )
        const run = (yield* Effect.orDie(runs.read(id)))!
        return yield* createdOrFound(FlowRun, run, created)
      })

    const answer = (result: { readonly created: boolean } & typeof OrchestrationResult.Type) => {
      const { created, ...body } = result
      return createdOrFound(OrchestrationResult, body, created)
    }

    return handlers
      .handle("create", ({ payload }) => create(payload))
      .handle("read", ({ path }) =>
        Effect.flatMap(Effect.orDie(runs.read(path.id)), (run) => (run === undefined ? flowRunNotFound : Effect.succeed(run)))
      )
      .handle("update", ({ path, payload }) =>
        Effect.gen(function* () {
          yield* checkParameterSize(payload.parameters, maxParameterSize)
          if (payload.job_variables != null) {
            const run = yield* Effect.orDie(runs.read(path.id))
            if (run === undefined) return yield* flowRunNotFound
            if (run.state === null) {
              return yield* new BadRequest({ detail: "Flow run state is required to update job variables but none exists" })
            }
            if (run.state.type !== "SCHEDULED") {
              return yield* new BadRequest({ detail: `Job variables for a flow run in state ${run.state.type} cannot be updated` })
            }
            const target = run.deployment_id === null ? undefined : yield* Effect.orDie(deployments.readWithJobTemplate(run.deployment_id))
            if (target === undefined) return yield* new BadRequest({ detail: "A deployment for the flow run could not be found" })
            // The run is where job variables end up: over its deployment's, they must satisfy the
            // pool's template, required ones included. A deployment without a pool has nothing to check.
            if (target.jobTemplate !== undefined) {
              const check = checkJobVariables(
                target.jobTemplate,
                { ...target.deployment.job_variables, ...payload.job_variables },
                { ignoreRequired: false }
              )
              if (!check.valid) return yield* new ValidationError({ detail: `Error updating flow run: ${describeFailure(check)}` })
            }
          }
          if (!(yield* Effect.orDie(runs.update(path.id, payload)))) return yield* flowRunNotFound
        })
      )
      .handle("delete", ({ path }) =>
        Effect.flatMap(Effect.orDie(runs.remove(path.id)), (deleted) => (deleted ? Effect.void : flowRunNotFound))
      )
      .handle("count", ({ payload }) => Effect.orDie(runs.count(payload)))
      // A page of runs written straight to JSON (wire.ts): the same body as the schema's encoding, faster.
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          Effect.map(Effect.orDie(runs.filter({ ...payload, limit })), (page) =>
            HttpServerResponse.text(flowRunsJson(page), { contentType: "application/json" })))
      )
      .handle("paginate", ({ payload }) =>
        paginate(payload, (limit, offset) => runs.filter({ ...payload, limit, offset }), runs.count(payload))
      )
      .handle("bulkDelete", ({ payload }) =>
        Effect.map(Effect.orDie(runs.removeMatching(payload.flow_runs, payload.limit)), (deleted) => ({ deleted }))
      )
      .handle("updateLabels", ({ path, payload }) =>
        Effect.flatMap(Effect.orDie(runs.updateLabels(path.id, payload)), (updated) => (updated ? Effect.void : flowRunNotFound))
      )
      .handle("lateness", ({ payload }) => Effect.orDie(runs.lateness(payload)))
      .handle("history", ({ payload }) =>
        Effect.flatMap(historyWindow(payload), (window) => Effect.orDie(runs.history(payload, window)))
      )
      .handle("bulkSetState", ({ payload }) =>
        Effect.gen(function* () {
          const ids = yield* Effect.orDie(runs.idsMatching(payload.flow_runs, payload.limit))
          // One run after the other, each in its own transaction; a failure answers ABORT for that run.
          const results = yield* Effect.forEach(ids, (id) =>
            runs.setState(id, payload.state, payload.force).pipe(
              Effect.map((result) => ({
                flow_run_id: id,
                status: result?.status ?? ("ABORT" as const),
                state: result?.state ?? null,
                details: result?.details ?? { type: "abort_details" as const, reason: "Flow run not found" }
              })),
              Effect.catchAll((error) =>
                Effect.succeed({
                  flow_run_id: id,
                  status: "ABORT" as const,
                  state: null,
                  details: { type: "abort_details" as const, reason: String((error as { message?: string }).message ?? error) }
                })
              )
            )
          )
          return { results }
        })
      )
      .handle("createInput", ({ path, payload }) =>
        Effect.gen(function* () {
          const outcome = yield* Effect.orDie(runs.createInput(path.id, payload))
          if (outcome === "duplicate") return yield* new Conflict({ detail: "A flow run input with this key already exists." })
          if (outcome === "missing") return yield* flowRunNotFound
          return null
        })
      )
      .handle("filterInputs", ({ path, payload }) => Effect.orDie(runs.filterInputs(path.id, payload)))
      .handle("readInput", ({ path }) =>
        Effect.flatMap(Effect.orDie(runs.readInput(path.id, path.key)), (value) =>
          value === undefined ? flowRunInputNotFound : Effect.succeed(HttpServerResponse.text(value))
        )
      )
      .handle("deleteInput", ({ path }) =>
        Effect.flatMap(Effect.orDie(runs.deleteInput(path.id, path.key)), (deleted) =>
          deleted ? Effect.void : flowRunInputNotFound
        )
      )
      .handle("resume", ({ path, payload }) =>
        Effect.flatMap(resumer.resume(path.id, payload.run_input), (result) => (result === undefined ? flowRunNotFound : answer(result)))
      )
      .handle("downloadLogs", ({ path }) =>
        Effect.gen(function* () {
          const run = yield* Effect.orDie(runs.read(path.id))
          if (run === undefined) return yield* flowRunNotFound
          const pages = Stream.paginateEffect(0, (offset) =>
            Effect.map(
              Effect.orDie(
                logs.filter({ filter: { operator: "and_", flow_run_id: { any_: [path.id] } }, sort: "TIMESTAMP_ASC", offset, limit: LOG_PAGE })
              ),
              (page) => [csvRows(page), page.length < LOG_PAGE ? Option.none() : Option.some(offset + LOG_PAGE)] as const
            )
          )
          return HttpServerResponse.stream(Stream.encodeText(Stream.concat(Stream.make(CSV_HEADER), pages)), {
            contentType: "text/csv; charset=utf-8",
            headers: { "content-disposition": contentDisposition(run.name) }
          })
        })
      )
      .handle("graph", ({ path }) =>
        Effect.gen(function* () {
          if ((yield* Effect.orDie(runs.read(path.id))) === undefined) return yield* flowRunNotFound
          return dependencies(yield* Effect.orDie(taskRuns.forGraph(path.id)))
        })
      )
      .handle("graphV2", ({ path, urlParams }) =>
        Effect.gen(function* () {
          const run = yield* Effect.orDie(runs.read(path.id))
          if (run === undefined) return yield* flowRunNotFound
          const tasks = yield* Effect.orDie(taskRuns.forGraph(path.id))
          const maxNodes = settings.server.flow_run_graph.max_nodes
          if (tasks.length > maxNodes) {
            return yield* new BadRequest({ detail: `The graph of flow run ${path.id} has more than ${maxNodes} nodes.` })
          }
          const artifactRows = yield* Effect.orDie(artifacts.forGraph(path.id, settings.server.flow_run_graph.max_artifacts))
          const artifactsOf = (taskRunId: string | null) =>
            artifactRows.filter((a) => a.task_run_id === taskRunId).map(({ task_run_id: _, ...artifact }) => artifact)
          const graph = nodeGraph(tasks, urlParams.since ?? new Date(-8.64e15), artifactsOf)
          const history = yield* Effect.orDie(runs.readStates(path.id))
          return {
            start_time: run.start_time ?? run.expected_start_time,
            end_time: run.end_time,
            root_node_ids: graph.root_node_ids,
            nodes: graph.nodes,
            artifacts: artifactsOf(null),
            states: history.map((s) => ({ id: s.id, timestamp: s.timestamp, type: s.type, name: s.name }))
          }
        })
      )
      .handle("setState", ({ path, payload }) =>
        Effect.gen(function* () {
          const result = yield* Effect.orDie(runs.setState(path.id, payload.state, payload.force))
          if (result === undefined) return yield* flowRunNotFound
          return yield* answer(result)
        })
      )
  })
)


export const FlowRunStatesLive = HttpApiBuilder.group(BatonApi, "flowRunStates", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* FlowRunsRepo
    return handlers
      .handle("read", ({ path }) =>
        Effect.flatMap(Effect.orDie(runs.readState(path.id)), (state) =>
          state === undefined ? new NotFound({ detail: "Flow run state not found" }) : Effect.succeed(state)
        )
      )
      .handle("list", ({ urlParams }) => Effect.orDie(runs.readStates(urlParams.flow_run_id)))
  })
)
