/**
 * The deployment rules: create-or-update by flow and name, PATCH with schedules matched by slug,
 * the `deployment:<id>` concurrency limit, parameter schema enforcement, pausing, deleting, and
 * removing the scheduled runs each change makes stale — each as the reference does it.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Either, Option } from "effect"
import { now } from "../domain/time.ts"
import { FlowsRepo } from "../flows/repo.ts"
import { ConcurrencyLimitsRepo } from "../concurrency/repo.ts"
import { BlockDocumentsRepo } from "../blocks/documents-repo.ts"
import { orFail, ValidationError } from "../domain/errors.ts"
import { Settings } from "../settings/settings.ts"
import { Hydration } from "../variables/hydration.ts"
import { workPoolNotFound } from "../work-pools/errors.ts"
import { DEFAULT_AGENT_POOL, WorkQueueLookup } from "../work-pools/queue-lookup.ts"
import { checkJobVariables, describeFailure } from "../work-pools/job-variables.ts"
import { WorkPoolsRepo } from "../work-pools/repo.ts"
import { parameterSchemaProblem, parameterSizeProblem, templateProblem } from "../domain/parameters.ts"
import {
  DeploymentBlockNotFound,
  DeploymentConflict,
  DeploymentLimitNotFound,
  DeploymentNotFound,
  deploymentNotFoundDot,
  JobVariablesRejected,
  ParametersNotHydrated,
  ParametersRejected,
  valueError
} from "./errors.ts"
import { type Columns, DeploymentsRepo } from "./repo.ts"
import { makeScheduleChanges } from "./schedule-changes.ts"
import type { DeploymentCreate, DeploymentUpdate } from "./schemas.ts"
import { inTransaction } from "../database/errors.ts"
import { traced } from "../domain/traced.ts"

const json = (value: unknown) => JSON.stringify(value)

const EMPTY_PARAMETER_SCHEMA = { type: "object", properties: {} }

/** `{}` is read as "no parameters", which the reference spells out. */
const normaliseParameterSchema = (schema: Record<string, unknown> | null) =>
  schema !== null && Object.keys(schema).length === 0 ? EMPTY_PARAMETER_SCHEMA : schema

export class Deployments extends Effect.Service<Deployments>()("baton/Deployments", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* DeploymentsRepo
    const flows = yield* FlowsRepo
    const pools = yield* WorkPoolsRepo
    const limits = yield* ConcurrencyLimitsRepo
    const documents = yield* BlockDocumentsRepo
    const queues = yield* WorkQueueLookup
    const settings = yield* Settings
    const hydration = yield* Hydration

    const { checkScheduleLimits, newSchedules, planSchedules, applySchedules, listSchedules, createSchedules, updateSchedule, deleteSchedule } =
      yield* makeScheduleChanges

    const checkParameterSize = (parameters: unknown) => {
      const problem = parameterSizeProblem(parameters, settings.server.api.max_parameter_size)
      return problem === undefined ? Effect.void : Effect.fail(valueError(["parameters"], problem))
    }

    const checkLimitsExclusive = (body: { readonly concurrency_limit?: number | null | undefined; readonly global_concurrency_limit_id?: string | null | undefined }) =>
      body.concurrency_limit && body.global_concurrency_limit_id
        ? Effect.fail(valueError([], "A deployment cannot have both a concurrency limit and a global concurrency limit."))
        : Effect.void

    const requireLimit = (id: string | null | undefined) =>
      id ? Effect.asVoid(limits.find(id).pipe(orFail(() => new DeploymentLimitNotFound()))) : Effect.void

    /** A block document a created deployment names must exist: the reference's 409, worded for whoever built the deployment elsewhere. */
    const requireBlockDocument = (kind: "storage" | "infrastructure", id: string | null | undefined) =>
      id == null
        ? Effect.void
        : Effect.flatMap(documents.findRow(id), (found) =>
          Option.isSome(found)
            ? Effect.void
            : Effect.fail(
              new DeploymentBlockNotFound({
                detail:
                  `Error creating deployment. Could not find ${kind} block with id: ${id}. This usually occurs when applying a deployment specification that was built against a different Prefect database / workspace.`
              })
            ))

    /**
     * Keeps the deployment's own limit in step with `concurrency_limit`: null deletes the limit it
     * points at, a number updates it or creates `deployment:<id>`.
     */
    const syncConcurrencyLimit = (deploymentId: string, limit: number | null) =>
      Effect.gen(function* () {
        // Written a moment ago in the caller's transaction: it is there.
        const row = yield* repo.findRow(deploymentId).pipe(orFail(() => new DeploymentNotFound()))
        const current = row.concurrency_limit_id === null ? Option.none() : yield* limits.find(row.concurrency_limit_id)
        if (Option.isSome(current)) {
          if (limit === null) yield* limits.remove(current.value.id)
          else if (current.value.limit !== limit) yield* limits.setLimit(current.value.id, limit)
          return
        }
        if (limit === null) return
        const id = yield* limits.create({ name: `deployment:${deploymentId}`, limit })
        yield* repo.update(deploymentId, { concurrency_limit_id: id })
      })

    /** Creates the deployment, or updates the one of that flow and name with what was sent. */
    const create = traced("Deployments.create")(function* (body: DeploymentCreate) {
      const has = (key: keyof DeploymentCreate) => body[key] !== undefined
      if (body.parameters !== undefined) yield* checkParameterSize(body.parameters)
      // Templates are stored unrendered (each run renders them): refused now when they could never render.
      const invalidTemplate = templateProblem(body.parameters)
      if (invalidTemplate !== undefined) return yield* valueError(["parameters", ...invalidTemplate.path], invalidTemplate.message)
      yield* checkLimitsExclusive(body)
      yield* checkScheduleLimits(body.schedules ?? [], ["schedules"])
      const parameterSchema = has("parameter_openapi_schema") ? normaliseParameterSchema(body.parameter_openapi_schema!) : undefined
      // The reference checks parameters at creation only when enforcement is asked for explicitly.
      if (body.enforce_parameter_schema === true && parameterSchema) {
        const problem = parameterSchemaProblem(parameterSchema, body.parameters ?? {}, { partial: true })
        if (problem?.kind === "invalid" || problem?.kind === "unusable-schema") return yield* valueError([], problem.message)
      }
      const at = yield* now
      const result = yield* inTransaction(
        sql,
        Effect.gen(function* () {
          if (body.work_pool_name && body.work_pool_name !== DEFAULT_AGENT_POOL) {
            const pool = yield* pools.findByName(body.work_pool_name).pipe(orFail(() => workPoolNotFound(body.work_pool_name!)))
            // The deployment's job variables must fit the pool's job template (required ones may come later).
            if (body.job_variables && Object.keys(body.job_variables).length > 0) {
              const check = checkJobVariables(pool.base_job_template, body.job_variables, { ignoreRequired: true })
              if (!check.valid) return yield* new ValidationError({ detail: `Error creating deployment: ${describeFailure(check)}` })
            }
          }
          yield* requireLimit(body.global_concurrency_limit_id)
          const queue = yield* queues.forDeployment(body)
          yield* requireBlockDocument("infrastructure", body.infrastructure_document_id)
          yield* requireBlockDocument("storage", body.storage_document_id)
          const flow = yield* flows.find(body.flow_id).pipe(orFail(() => new DeploymentConflict()))
          const labels = json({ ...flow.labels, "prefect.flow.id": flow.id, ...body.labels })
          const sent: Record<string, unknown> = {}
          for (const key of ["name", "flow_id", "paused", "enforce_parameter_schema", "work_queue_name", "storage_document_id", "infrastructure_document_id", "description", "path", "version", "entrypoint"] as const) {
            if (has(key)) sent[key] = body[key]
          }
          for (const key of ["concurrency_options", "parameters", "tags", "pull_steps"] as const) {
            if (has(key)) sent[key] = json(body[key])
          }
          if (parameterSchema !== undefined) sent.parameter_openapi_schema = json(parameterSchema)
          if (has("global_concurrency_limit_id")) sent.concurrency_limit_id = body.global_concurrency_limit_id
          const changes: Columns = {
            ...sent,
            labels,
            ...(queue !== null ? { work_queue_id: queue.id } : {}),
            // Empty job variables keep the ones stored.
            ...(body.job_variables && Object.keys(body.job_variables).length > 0 ? { job_variables: json(body.job_variables) } : {})
          }
          const insert: Columns = {
            parameter_openapi_schema: json({}),
            pull_steps: json([]),
            ...changes,
            ...(body.job_variables !== undefined ? { job_variables: json(body.job_variables) } : {})
          }
          const { id, created } = yield* repo.upsert(insert, changes)
          yield* repo.deleteScheduledRuns(id, { autoScheduledOnly: true, after: at })
          yield* repo.deleteSchedules(id)
          yield* repo.createSchedules(id, newSchedules(body.schedules ?? [], at))
          if (has("concurrency_limit")) yield* syncConcurrencyLimit(id, body.concurrency_limit ?? null)
          return { id, created }
        })
      ).pipe(
        // Two schedules sent with one slug: the reference's integrity conflict.
        Effect.catchTag("ScheduleSlugTaken", () => new DeploymentConflict())
      )
      // Deleted by another request since this one committed: there is nothing to answer with.
      const deployment = yield* repo.find(result.id).pipe(orFail(() => new DeploymentNotFound()))
      return { deployment, created: result.created }
    })

    /** PATCH /deployments/{id}: changes what was sent; stale future auto-scheduled runs go. */
    const update = traced("Deployments.update")(function* (id: string, body: DeploymentUpdate) {
      // As the reference validates the body: the parameters sent, before anything is read.
      if (body.parameters != null) yield* checkParameterSize(body.parameters)
      yield* checkLimitsExclusive(body)
      yield* checkScheduleLimits(body.schedules ?? [], ["schedules"])
      const existing = yield* repo.find(id).pipe(orFail(deploymentNotFoundDot))
      const plan = yield* planSchedules(body.schedules, existing.schedules)
      let parameters = existing.parameters
      if (body.parameters != null) {
        const hydrated = yield* hydration.hydrate(body.parameters)
        if (Either.isLeft(hydrated)) {
          return yield* new ParametersNotHydrated({ detail: `Error hydrating deployment parameters: ${hydrated.left}` })
        }
        parameters = hydrated.right
        yield* checkParameterSize(parameters)
      }
      const parameterSchema = body.parameter_openapi_schema != null ? normaliseParameterSchema(body.parameter_openapi_schema) : undefined
      if (body.enforce_parameter_schema ?? existing.enforce_parameter_schema) {
        const problem = parameterSchemaProblem(parameterSchema && Object.keys(parameterSchema).length > 0 ? parameterSchema : existing.parameter_openapi_schema, parameters, { partial: true })
        if (problem?.kind === "no-schema") {
          return yield* new ParametersRejected({
            detail:
              "Error updating deployment: Cannot update parameters because parameter schema enforcement is enabled and the deployment does not have a valid parameter schema."
          })
        }
        if (problem?.kind === "invalid") return yield* new ParametersRejected({ detail: `Error updating deployment: ${problem.message}` })
        if (problem?.kind === "unusable-schema") return yield* new ValidationError({ detail: problem.message })
      }
      if (body.work_pool_name) {
        const poolName = body.work_pool_name
        const pool = yield* pools.findByName(poolName).pipe(orFail(() => workPoolNotFound(poolName)))
        const check = checkJobVariables(pool.base_job_template, body.job_variables ?? existing.job_variables, { ignoreRequired: true })
        if (!check.valid) return yield* new JobVariablesRejected({ detail: `Error creating deployment: <ValidationError: "${check.message}">` })
      }
      yield* requireLimit(body.global_concurrency_limit_id)
      const at = yield* now
      yield* inTransaction(
        sql,
        Effect.gen(function* () {
          const changes: Record<string, unknown> = {}
          for (const key of ["version", "description", "paused", "work_queue_name", "path", "entrypoint", "storage_document_id", "infrastructure_document_id"] as const) {
            if (body[key] !== undefined) changes[key] = body[key]
          }
          if (body.enforce_parameter_schema != null) changes.enforce_parameter_schema = body.enforce_parameter_schema
          for (const key of ["concurrency_options", "tags", "pull_steps"] as const) {
            if (body[key] !== undefined) changes[key] = json(body[key])
          }
          // null clears the parameters: a deployment always has an object of them.
          if (body.parameters !== undefined) changes.parameters = json(body.parameters === null ? {} : parameters)
          if (body.parameter_openapi_schema !== undefined) changes.parameter_openapi_schema = json(body.parameter_openapi_schema === null ? null : parameterSchema)
          if (body.global_concurrency_limit_id !== undefined) changes.concurrency_limit_id = body.global_concurrency_limit_id
          if (body.job_variables && Object.keys(body.job_variables).length > 0) changes.job_variables = json(body.job_variables)
          // An explicit null pool detaches the deployment from its queue (say, to serve it instead).
          if (body.work_pool_name === null) changes.work_queue_id = null
          else if (body.work_pool_name || body.work_queue_name) changes.work_queue_id = (yield* queues.forDeployment(body))!.id
          if (!(yield* repo.update(id, changes))) return yield* deploymentNotFoundDot()
          yield* repo.deleteScheduledRuns(id, { autoScheduledOnly: true, after: at })
          yield* applySchedules(id, plan, at)
          if (body.concurrency_limit !== undefined) yield* syncConcurrencyLimit(id, body.concurrency_limit)
        })
      ).pipe(
        // A schedule renamed to a slug another has: the reference's integrity conflict.
        Effect.catchTag("ScheduleSlugTaken", () => new DeploymentConflict())
      )
    })

    /** Pauses: no runs are scheduled while paused, and the auto-scheduled ones waiting go. */
    const pause = traced("Deployments.pause")(function* (id: string) {
      const found = yield* inTransaction(sql, Effect.gen(function* () {
        if (!(yield* repo.update(id, { paused: true }))) return false
        yield* repo.deleteScheduledRuns(id, { autoScheduledOnly: true })
        return true
      }))
      if (!found) return yield* new DeploymentNotFound()
    })

    const resume = (id: string) =>
      Effect.flatMap(repo.update(id, { paused: false }), (found) => (found ? Effect.void : new DeploymentNotFound()))

    /** Deletes the deployment with its waiting scheduled runs (manual ones too) and its own limit. */
    const remove = (id: string) =>
      inTransaction(sql, Effect.gen(function* () {
        const row = yield* repo.findRow(id)
        if (Option.isNone(row)) return false
        yield* repo.deleteScheduledRuns(id, { autoScheduledOnly: false })
        yield* repo.remove(id)
        if (row.value.concurrency_limit_id !== null) yield* limits.remove(row.value.concurrency_limit_id)
        return true
      }))

    const removeOne = (id: string) => Effect.flatMap(remove(id), (found) => (found ? Effect.void : new DeploymentNotFound()))

    const removeMatching = (filter: Parameters<typeof repo.idsMatching>[0], limit: number) =>
      Effect.gen(function* () {
        const ids = yield* repo.idsMatching(filter, limit)
        const deleted = []
        for (const id of ids) if (yield* remove(id)) deleted.push(id)
        return deleted
      })

    return {
      create,
      update,
      pause,
      resume,
      remove: removeOne,
      removeMatching,
      listSchedules,
      createSchedules,
      updateSchedule,
      deleteSchedule,
      read: (id: string) => repo.find(id).pipe(orFail(() => new DeploymentNotFound()))
    } as const
  }),
  dependencies: [
    BlockDocumentsRepo.Default,
    ConcurrencyLimitsRepo.Default,
    DeploymentsRepo.Default,
    FlowsRepo.Default,
    Hydration.Default,
    WorkPoolsRepo.Default,
    WorkQueueLookup.Default
  ]
}) {}
