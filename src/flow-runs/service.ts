/**
 * The flow runs area's rules: what a new run starts with and where it goes, which job variables a
 * run may take, state proposals one by one or in bulk, and the graph of a run.
 */
import { Effect, Option } from "effect"
import { ArtifactsRepo } from "../artifacts/repo.ts"
import { DeploymentsRepo } from "../deployments/repo.ts"
import { BadRequest, orFail, ValidationError } from "../domain/errors.ts"
import { generateName } from "../domain/names.ts"
import { checkParameterSize } from "../domain/parameters.ts"
import { emptyStateDetails, type StateCreate } from "../domain/states.ts"
import { FlowsRepo } from "../flows/repo.ts"
import { Orchestrator } from "../orchestration/orchestrator.ts"
import { Settings } from "../settings/settings.ts"
import { TaskRunsRepo } from "../task-runs/repo.ts"
import { checkJobVariables, describeFailure } from "../work-pools/job-variables.ts"
import { WorkQueueLookup } from "../work-pools/queue-lookup.ts"
import { FlowRunConflict, FlowRunNotFound } from "./errors.ts"
import { dependencies, nodeGraph } from "./graph.ts"
import { FlowRunsRepo } from "./repo.ts"
import type { FlowRunCreate, FlowRunFilter, FlowRunUpdate } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

export class FlowRuns extends Effect.Service<FlowRuns>()("baton/FlowRuns", {
  effect: Effect.gen(function* () {
    const runs = yield* FlowRunsRepo
    const flows = yield* FlowsRepo
    const deployments = yield* DeploymentsRepo
    const taskRuns = yield* TaskRunsRepo
    const artifacts = yield* ArtifactsRepo
    const queues = yield* WorkQueueLookup
    const orchestrator = yield* Orchestrator
    const settings = yield* Settings
    const maxParameterSize = settings.server.api.max_parameter_size

    const find = (id: string) => runs.find(id).pipe(orFail(() => new FlowRunNotFound()))

    /** A new run (or, for a used idempotency key, the flow's run with that key), and whether it was made. */
    const create = traced("FlowRuns.create")(function* (payload: FlowRunCreate) {
      yield* checkParameterSize(payload.parameters, maxParameterSize)
      // A pool (and queue) named here must exist: the run goes to that queue, or the pool's default one.
      const queue = payload.work_pool_name === null
        ? null
        : payload.work_queue_name
        ? yield* queues.queueInPool(payload.work_pool_name, payload.work_queue_name)
        : yield* queues.defaultQueue(payload.work_pool_name)
      const flow = yield* flows.find(payload.flow_id).pipe(orFail(() => new FlowRunConflict()))
      const made = yield* runs.create({
        ...payload,
        name: payload.name ?? (yield* generateName),
        work_queue_id: queue?.id ?? null,
        // The run's labels: its flow's, the flow id, then the caller's.
        labels: { ...flow.labels, "prefect.flow.id": flow.id, ...payload.labels },
        // A run created without a state starts Pending.
        state: payload.state ?? { type: "PENDING", name: null, message: null, data: null, state_details: emptyStateDetails }
      })
      if (made.run !== undefined) return { run: made.run, created: true }
      // The run its idempotency key names; deleted in the instant since: as if the flow had been.
      const run = yield* runs.find(made.id).pipe(orFail(() => new FlowRunConflict()))
      return { run, created: false }
    })

    /** Job variables change only on a Scheduled run, and must satisfy its deployment's pool template. */
    const checkJobVariablesUpdate = (id: string, jobVariables: Record<string, unknown>) =>
      Effect.gen(function* () {
        const run = yield* find(id)
        if (run.state === null) {
          return yield* new BadRequest({ detail: "Flow run state is required to update job variables but none exists" })
        }
        if (run.state.type !== "SCHEDULED") {
          return yield* new BadRequest({ detail: `Job variables for a flow run in state ${run.state.type} cannot be updated` })
        }
        const found = run.deployment_id === null ? Option.none() : yield* deployments.findRunSource(run.deployment_id)
        if (Option.isNone(found)) return yield* new BadRequest({ detail: "A deployment for the flow run could not be found" })
        const target = found.value
        // The run is where job variables end up: over its deployment's, they must satisfy the
        // pool's template, required ones included. A deployment without a pool has nothing to check.
        if (target.jobTemplate !== undefined) {
          const check = checkJobVariables(target.jobTemplate, { ...target.deployment.job_variables, ...jobVariables }, { ignoreRequired: false })
          if (!check.valid) return yield* new ValidationError({ detail: `Error updating flow run: ${describeFailure(check)}` })
        }
      })

    const update = traced("FlowRuns.update")(function* (id: string, payload: FlowRunUpdate) {
      yield* checkParameterSize(payload.parameters, maxParameterSize)
      if (payload.job_variables != null) yield* checkJobVariablesUpdate(id, payload.job_variables)
      if (!(yield* runs.update(id, payload))) return yield* new FlowRunNotFound()
    })

    const setState = (id: string, state: StateCreate, force: boolean) =>
      orchestrator.setFlowRunState(id, state, { force }).pipe(orFail(() => new FlowRunNotFound()))

    /** Proposes `state` to each matching run in turn, each in its own transaction; a failure answers ABORT for that run. */
    const bulkSetState = traced("FlowRuns.bulkSetState")(function* (
      filter: FlowRunFilter | null | undefined,
      limit: number,
      state: StateCreate,
      force: boolean
    ) {
      const abort = (id: string, reason: string) => ({
        flow_run_id: id,
        status: "ABORT" as const,
        state: null,
        details: { type: "abort_details" as const, reason }
      })
      const ids = yield* runs.idsMatching(filter, limit)
      const results = yield* Effect.forEach(ids, (id) =>
        orchestrator.setFlowRunState(id, state, { force }).pipe(
          Effect.map(Option.match({
            onNone: () => abort(id, "Flow run not found"),
            onSome: (result) => ({ flow_run_id: id, status: result.status, state: result.state, details: result.details })
          })),
          Effect.catchAllDefect((defect) => Effect.succeed(abort(id, String((defect as { message?: string }).message ?? defect))))
        )
      )
      return { results }
    })

    /** The v1 graph: each task run with its upstream dependencies. */
    const graph = (id: string) =>
      Effect.zipRight(find(id), Effect.map(taskRuns.forGraph(id), dependencies))

    /** The v2 graph: task runs and subflow runs as nodes (at most `max_nodes`), artifacts, and the run's states. */
    const graphV2 = traced("FlowRuns.graphV2")(function* (id: string, since: Date | undefined) {
      const run = yield* find(id)
      const tasks = yield* taskRuns.forGraph(id)
      const maxNodes = settings.server.flow_run_graph.max_nodes
      if (tasks.length > maxNodes) {
        return yield* new BadRequest({ detail: `The graph of flow run ${id} has more than ${maxNodes} nodes.` })
      }
      const artifactRows = yield* artifacts.forGraph(id, settings.server.flow_run_graph.max_artifacts)
      const artifactsOf = (taskRunId: string | null) =>
        artifactRows.filter((a) => a.task_run_id === taskRunId).map(({ task_run_id: _, ...artifact }) => artifact)
      const graph = nodeGraph(tasks, since ?? new Date(-8.64e15), artifactsOf)
      const history = yield* runs.readStates(id)
      return {
        start_time: run.start_time ?? run.expected_start_time,
        end_time: run.end_time,
        root_node_ids: graph.root_node_ids,
        nodes: graph.nodes,
        artifacts: artifactsOf(null),
        states: history.map((s) => ({ id: s.id, timestamp: s.timestamp, type: s.type, name: s.name }))
      }
    })

    return { find, create, update, setState, bulkSetState, graph, graphV2 } as const
  }),
  dependencies: [
    FlowRunsRepo.Default,
    FlowsRepo.Default,
    DeploymentsRepo.Default,
    TaskRunsRepo.Default,
    ArtifactsRepo.Default,
    WorkQueueLookup.Default,
    Orchestrator.Default
  ]
}) {}
