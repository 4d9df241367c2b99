/**
 * Runs of a deployment: creating them on demand (one or a batch, parameters merged over the
 * deployment's and checked against its schema), the worker's poll for scheduled runs, scheduling a
 * window now, and the legacy work-queue check.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Either, Option } from "effect"
import { generateName } from "../domain/names.ts"
import { emptyStateDetails, type StateCreate } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { FlowRunsRepo } from "../flow-runs/repo.ts"
import { inTransaction } from "../database/errors.ts"
import { orFail, ValidationError } from "../domain/errors.ts"
import { checkJobVariables, describeFailure } from "../work-pools/job-variables.ts"
import { WorkQueuesRepo } from "../work-pools/queues-repo.ts"
import { WorkQueueLookup } from "../work-pools/queue-lookup.ts"
import { Settings } from "../settings/settings.ts"
import { type TemplateBudget, templateBudget } from "../domain/templates.ts"
import { Hydration } from "../variables/hydration.ts"
import { parameterSchemaProblem, parameterSizeProblem } from "../domain/parameters.ts"
import { DeploymentsRepo, type NamedQueue, type RunSource } from "./repo.ts"
import { DeploymentScheduler, type WindowOptions } from "./scheduler.ts"
import { deploymentRunLabels } from "./scheduling.ts"
import type { DeploymentFlowRunCreate } from "./schemas.ts"
import type { FlowRun } from "../flow-runs/schemas.ts"
import {
  DeploymentConflict,
  DeploymentNotFound,
  DeploymentWithoutPool,
  ParametersNotHydrated,
  ParametersRejected,
  TooManyFlowRuns,
  valueError
} from "./errors.ts"
import { traced } from "../domain/traced.ts"

/** Why a run could not be created; the single and bulk routes word these differently, as the reference does. */
type RunProblem =
  | { readonly kind: "hydration"; readonly message: string }
  | { readonly kind: "no-schema" }
  | { readonly kind: "invalid"; readonly message: string }
  | { readonly kind: "unusable-schema"; readonly message: string }
  | { readonly kind: "no-pool"; readonly queue: string }
  | { readonly kind: "job-variables"; readonly message: string }
  /** The run names an object that does not exist (an infrastructure document, say): nothing was written for it. */
  | { readonly kind: "integrity" }

export const MAX_BULK_RUNS = 100

export class DeploymentRuns extends Effect.Service<DeploymentRuns>()("baton/DeploymentRuns", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* DeploymentsRepo
    const runs = yield* FlowRunsRepo
    const workQueues = yield* WorkQueuesRepo
    const queues = yield* WorkQueueLookup
    const scheduler = yield* DeploymentScheduler
    const settings = yield* Settings
    const hydration = yield* Hydration

    /**
     * The deployment its runs are made from, with its work pool's job template (read once per
     * request) and, when one is named, the queue of its pool a run goes to.
     */
    const readRunTarget = (id: string, queueName?: string) =>
      repo.findRunSource(id, queueName).pipe(orFail(() => new DeploymentNotFound()))

    /**
     * Creates one run of the deployment; a problem with its parameters or queue is returned, not
     * raised. Its parameters' templates spend from `budget` (the request's).
     */
    const createRun = (
      { deployment, jobTemplate, namedQueue }: {
        readonly deployment: RunSource
        readonly jobTemplate: Record<string, unknown> | undefined
        /** The queue named for the run, when the deployment was read with it. */
        readonly namedQueue?: { readonly name: string; readonly queue: Option.Option<NamedQueue> }
      },
      body: DeploymentFlowRunCreate,
      createdBy: FlowRun["created_by"] = null,
      budget: TemplateBudget = templateBudget()
    ) =>
      Effect.gen(function* () {
        const hydrated = yield* hydration.hydrate({ ...deployment.parameters, ...body.parameters }, budget)
        if (Either.isLeft(hydrated)) return Either.left<RunProblem>({ kind: "hydration", message: hydrated.left })
        const parameters = hydrated.right
        if (body.enforce_parameter_schema ?? deployment.enforce_parameter_schema) {
          const problem = parameterSchemaProblem(deployment.parameter_openapi_schema, parameters, { partial: false })
          if (problem !== undefined) return Either.left<RunProblem>(problem)
        }
        // The run's job variables over the deployment's must satisfy its pool's job template.
        if (jobTemplate !== undefined) {
          const check = checkJobVariables(jobTemplate, { ...deployment.job_variables, ...body.job_variables }, { ignoreRequired: false })
          if (!check.valid) return Either.left<RunProblem>({ kind: "job-variables", message: describeFailure(check) })
        }
        const state: StateCreate = body.state ?? {
          type: "SCHEDULED",
          name: null,
          message: null,
          data: null,
          state_details: { ...emptyStateDetails, scheduled_time: yield* now }
        }
        const name = body.name || (yield* generateName)
        const insert = (queue: { readonly id: string | null; readonly name: string | null }) => runs.create({
            flow_id: deployment.flow_id,
            deployment_id: deployment.id,
            deployment_version: deployment.version,
            name,
            flow_version: null,
            parameters,
            context: body.context,
            parent_task_run_id: body.parent_task_run_id,
            infrastructure_document_id: body.infrastructure_document_id ?? deployment.infrastructure_document_id,
            empirical_policy: body.empirical_policy,
            tags: [...new Set([...deployment.tags, ...body.tags])],
            labels: { ...deploymentRunLabels(deployment), ...body.labels },
            idempotency_key: body.idempotency_key,
            work_queue_name: queue.name,
            work_queue_id: queue.id,
            // A run's own job variables; workers merge them over the deployment's when they start it.
            job_variables: body.job_variables ?? {},
            created_by: createdBy,
            state
          })
        let queue = { id: deployment.work_queue_id, name: deployment.work_queue_name }
        if (body.work_queue_name) {
          if (deployment.work_queue_id === null || deployment.work_pool_name === null) {
            return Either.left<RunProblem>({ kind: "no-pool", queue: body.work_queue_name })
          }
          const poolName = deployment.work_pool_name
          const queueName = body.work_queue_name
          const existing = namedQueue?.name === queueName ? namedQueue.queue : yield* workQueues.findByName(poolName, queueName)
          // A queue to create and the run stand or fall together: a run refused by the database (a
          // reference to nothing) leaves no new queue behind. The run alone is one statement.
          if (Option.isNone(existing)) {
            return yield* inTransaction(sql, Effect.flatMap(queues.ensureQueueInPool(poolName, queueName), insert))
              .pipe(Effect.map(({ id, created, run }) => Either.right({ id, created, run })))
          }
          queue = { id: existing.value.id, name: existing.value.name }
        }
        const { id, created, run } = yield* insert(queue)
        return Either.right({ id, created, run })
      }).pipe(
        // A key the database refused (the flow, or the run's parent, gone): here it is the run's problem.
        Effect.catchTag("FlowRunConflict", () => Effect.succeed(Either.left<RunProblem>({ kind: "integrity" })))
      )

    const checkSize = (parameters: unknown, loc: ReadonlyArray<string | number>) => {
      const problem = parameterSizeProblem(parameters, settings.server.api.max_parameter_size)
      return problem === undefined ? Effect.void : Effect.fail(valueError(loc, problem))
    }

    /** POST /deployments/{id}/create_flow_run: the new run, or the one its idempotency key names. */
    const createFlowRun = traced("DeploymentRuns.createFlowRun")(function* (
      id: string,
      body: DeploymentFlowRunCreate,
      createdBy: FlowRun["created_by"] = null
    ) {
      yield* checkSize(body.parameters, ["parameters"])
      const target = yield* readRunTarget(id, body.work_queue_name || undefined)
      const outcome = yield* createRun(target, body, createdBy)
      if (Either.isLeft(outcome)) {
        const problem = outcome.left
        switch (problem.kind) {
          case "hydration":
            return yield* new ParametersNotHydrated({ detail: `Error hydrating flow run parameters: ${problem.message}` })
          case "no-schema":
            return yield* new ParametersRejected({
              detail:
                "Error updating deployment: Cannot update parameters because parameter schema enforcement is enabled and the deployment does not have a valid parameter schema."
            })
          case "invalid":
            return yield* new ParametersRejected({ detail: `Error creating flow run: ${problem.message}` })
          case "unusable-schema":
            // As the reference answers a schema it cannot use (circular references).
            return yield* new ValidationError({ detail: problem.message })
          case "job-variables":
            return yield* new ValidationError({ detail: `Error creating flow run: ${problem.message}` })
          case "no-pool":
            return yield* new DeploymentWithoutPool({
              detail:
                `Cannot create flow run in work queue ${problem.queue} because deployment ${id} is not associated with a work pool. Please remove work_pool_name and try again.`
            })
          case "integrity":
            return yield* new DeploymentConflict()
        }
      }
      const made = outcome.right
      if (made.run !== undefined) return { run: made.run, created: true }
      // The run its idempotency key names; deleted in the instant since: as if the database had refused it.
      const run = yield* runs.find(made.id).pipe(orFail(() => new DeploymentConflict()))
      return { run, created: false }
    })

    const bulkMessage = (problem: RunProblem) => {
      switch (problem.kind) {
        case "hydration":
          return problem.message
        case "no-schema":
          return "Parameter schema enforcement is enabled but deployment has no valid schema."
        case "invalid":
          return `Parameter validation failed: ${problem.message}`
        case "unusable-schema":
          return problem.message
        case "no-pool":
          return `Cannot create flow run in work queue ${problem.queue} because deployment is not associated with a work pool.`
        case "job-variables":
          return `Error creating flow run: ${problem.message}`
        case "integrity":
          return new DeploymentConflict().detail
      }
    }

    /** POST /deployments/{id}/create_flow_run/bulk: each run created or reported as failed, in order. */
    const createFlowRuns = traced("DeploymentRuns.createFlowRuns")(function* (id: string, bodies: ReadonlyArray<DeploymentFlowRunCreate>) {
      if (bodies.length > MAX_BULK_RUNS) {
        return yield* new TooManyFlowRuns({ detail: `Cannot create more than ${MAX_BULK_RUNS} flow runs at once.` })
      }
      for (const [i, body] of bodies.entries()) yield* checkSize(body.parameters, [i, "parameters"])
      const target = yield* readRunTarget(id)
      const results = []
      // The runs' templates share one budget: one request renders them all on the one thread.
      const budget = templateBudget()
      for (const body of bodies) {
        // Each run stands alone: one that cannot be written fails without undoing or stopping the others.
        const outcome = yield* createRun(target, body, null, budget).pipe(
          Effect.catchAll((error) => Effect.succeed(Either.left<RunProblem>({ kind: "hydration", message: error.detail })))
        )
        results.push(
          Either.isLeft(outcome)
            ? { flow_run_id: null, status: "FAILED" as const, error: bulkMessage(outcome.left) }
            : { flow_run_id: outcome.right.id, status: "CREATED" as const, error: null }
        )
      }
      return { results }
    })

    /**
     * The worker's poll: Scheduled runs of the deployments due by `before` (no bound without it),
     * soonest first. The deployments count as polled: READY.
     */
    const scheduledFlowRuns = traced("DeploymentRuns.scheduledFlowRuns")(function* (
      ids: ReadonlyArray<string>,
      before: Date | undefined,
      limit: number
    ) {
      if (ids.length === 0) return []
      const found = yield* runs.filter({
          flow_runs: {
            operator: "and_",
            deployment_id: { operator: "and_", any_: ids },
            state: { operator: "and_", type: { any_: ["SCHEDULED"] } },
            ...(before === undefined ? {} : { next_scheduled_start_time: { before_: before } })
          },
          sort: "NEXT_SCHEDULED_START_TIME_ASC",
          offset: 0,
          limit
        })
      yield* repo.markReady(ids, yield* now)
      return found
    })

    /** POST /deployments/{id}/schedule: the runs the active schedules ask for in the window, now. */
    const scheduleRuns = (id: string, window: WindowOptions) => Effect.asVoid(scheduler.schedule([id], window))

    /** The queues whose legacy filter would take the deployment's runs. */
    const workQueueCheck = traced("DeploymentRuns.workQueueCheck")(function* (id: string) {
      const deployment = yield* repo.find(id).pipe(orFail(() => new DeploymentNotFound()))
      return yield* workQueues.queuesAccepting(deployment)
    })

    return { createFlowRun, createFlowRuns, scheduledFlowRuns, scheduleRuns, workQueueCheck } as const
  }),
  dependencies: [
    DeploymentScheduler.Default,
    DeploymentsRepo.Default,
    FlowRunsRepo.Default,
    Hydration.Default,
    WorkQueueLookup.Default,
    WorkQueuesRepo.Default
  ]
}) {}
