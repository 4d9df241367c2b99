/**
 * Creating, replacing, switching and deleting automations: clients' trigger ids are replaced by new
 * ones, run-deployment job variables are checked against the deployment's work pool, the deployments
 * an automation runs are related to it, and every change is announced (to the triggers service) and
 * emitted as a `prefect.automation.created/updated/deleted` event.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { inTransaction } from "../database/errors.ts"
import { afterCommit } from "../database/transactions.ts"
import { deploymentNotFoundDot } from "../deployments/errors.ts"
import { DeploymentsRepo } from "../deployments/repo.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { Events } from "../events/service.ts"
import { orFail, ValidationError } from "../domain/errors.ts"
import { valueErrorItem } from "../domain/problems.ts"
import { checkJobVariables, describeFailure } from "../work-pools/job-variables.ts"
import { WorkPoolsRepo } from "../work-pools/repo.ts"
import { AUTOMATION_CHANGES_CHANNEL, AutomationChanges } from "./changes.ts"
import { AutomationNotFound } from "./errors.ts"
import { type AutomationFields, AutomationsRepo } from "./repo.ts"
import { runDeploymentLoop } from "./body-checks.ts"
import { type Action, Automation, type AutomationCreate, type AutomationUpdate, MIN_PROACTIVE_WITHIN, type Trigger } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

const encodeAutomation = Schema.encodeSync(Automation)

/** The deployments an automation's selected run-deployment actions run. */
const deploymentsRun = (actions: ReadonlyArray<Action>) =>
  actions.flatMap((a) => (a.type === "run-deployment" && a.source === "selected" && a.deployment_id ? [a.deployment_id] : []))

/** The trigger with fresh ids throughout (clients' ids are never kept) and proactive windows settled. */
export const settleTrigger = (trigger: Trigger, newId: () => string): Trigger => {
  if (trigger.type === "event") {
    return { ...trigger, id: newId(), within: trigger.posture === "Proactive" && trigger.within === 0 ? MIN_PROACTIVE_WITHIN : trigger.within }
  }
  return { ...trigger, id: newId(), triggers: trigger.triggers.map((t) => settleTrigger(t, newId)) }
}

export class Automations extends Effect.Service<Automations>()("baton/Automations", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* AutomationsRepo
    const deployments = yield* DeploymentsRepo
    const pools = yield* WorkPoolsRepo
    const changes = yield* AutomationChanges
    const events = yield* Events

    /** The event of a change, its payload the automation as the API shows it. */
    const lifecycleEvent = (automation: Automation, action: "created" | "updated" | "deleted") =>
      Effect.gen(function* () {
        return {
          id: yield* newId,
          occurred: yield* now,
          event: `prefect.automation.${action}`,
          resource: { "prefect.resource.id": `prefect.automation.${automation.id}`, "prefect.resource.name": automation.name },
          related: [],
          payload: encodeAutomation(automation) as Record<string, unknown>,
          follows: null
        }
      })

    /** Inside the transaction of the change: heard in process and by other replicas once it commits, its events written with it. */
    const announce = (automations: ReadonlyArray<Automation>, kind: "created" | "updated" | "deleted") =>
      Effect.gen(function* () {
        yield* afterCommit(changes.publish(automations.map((a) => ({ id: a.id, kind }))))
        // Other replicas' triggers services listen for these.
        yield* Effect.forEach(automations, (a) => repo.notify(AUTOMATION_CHANGES_CHANNEL, JSON.stringify({ automation_id: a.id, event_type: kind })))
        yield* events.emit(yield* Effect.forEach(automations, (a) => lifecycleEvent(a, kind)))
      })

    /**
     * A run-deployment action with job variables must name a deployment that exists, and its
     * variables (over the deployment's) must satisfy the deployment's work pool job template.
     */
    const checkRunDeployments = (actions: ReadonlyArray<Action>, every: boolean) =>
      Effect.gen(function* () {
        const problems: Array<string> = []
        for (const action of actions) {
          if (action.type !== "run-deployment" || !action.deployment_id || action.job_variables === null) continue
          if (!every && Object.keys(action.job_variables).length === 0) continue
          const deployment = yield* deployments.find(action.deployment_id).pipe(orFail(deploymentNotFoundDot))
          if (deployment.work_pool_name === null) continue
          const found = yield* pools.findByName(deployment.work_pool_name)
          if (Option.isNone(found)) continue
          const pool = found.value
          const check = checkJobVariables(pool.base_job_template, { ...deployment.job_variables, ...action.job_variables }, { ignoreRequired: false })
          if (!check.valid) problems.push(describeFailure(check))
        }
        if (problems.length > 0) return yield* new ValidationError({ detail: `Error creating automation: ${problems.join(" ")}` })
      })

    const settle = <B extends AutomationUpdate>(body: B): AutomationFields => ({
      name: body.name,
      description: body.description,
      enabled: body.enabled,
      tags: body.tags,
      trigger: settleTrigger(body.trigger, () => crypto.randomUUID()),
      actions: body.actions,
      actions_on_trigger: body.actions_on_trigger,
      actions_on_resolve: body.actions_on_resolve
    })

    const create = traced("Automations.create")(function* (body: AutomationCreate) {
      yield* checkRunDeployments(body.actions, false)
      const created = yield* inTransaction(
        sql,
        Effect.gen(function* () {
          const automation = yield* repo.create(settle(body))
          if (body.owner_resource) yield* repo.relate(automation.id, body.owner_resource, true)
          yield* repo.relateDeployments(automation.id, deploymentsRun(automation.actions))
          yield* announce([automation], "created")
          return automation
        })
      )
      return created
    })

    const find = (id: string) => repo.find(id).pipe(orFail(() => new AutomationNotFound()))

    /** PUT: the automation becomes exactly the body (defaults for what it leaves out). */
    const replace = traced("Automations.replace")(function* (id: string, body: AutomationUpdate) {
      yield* checkRunDeployments(body.actions, true)
      yield* find(id)
      const fields = settle(body)
      yield* inTransaction(
        sql,
        Effect.gen(function* () {
          // Deleted since it was read: nothing to relate (its relations would name no automation).
          if (!(yield* repo.replace(id, fields))) return yield* new AutomationNotFound()
          yield* repo.relateDeployments(id, deploymentsRun(fields.actions))
          yield* announce([yield* find(id)], "updated")
        })
      )
    })

    /** PATCH: switches the automation on or off; switching on must not make a run-deployment loop. */
    const setEnabled = traced("Automations.setEnabled")(function* (id: string, enabled: boolean) {
      const automation = yield* find(id)
      const loop = runDeploymentLoop({ ...automation, enabled })
      if (loop !== undefined) {
        // As the reference reports it: the automation as it would become, checked as a whole
        // (its loc is the automation's own, not the request body's).
        return yield* new ValidationError({ detail: [valueErrorItem([], loop, encodeAutomation({ ...automation, enabled }))] })
      }
      yield* inTransaction(
        sql,
        Effect.gen(function* () {
          if (!(yield* repo.setEnabled(id, enabled))) return yield* new AutomationNotFound()
          yield* announce([yield* find(id)], "updated")
        })
      )
    })

    const remove = traced("Automations.remove")(function* (id: string) {
      yield* inTransaction(
        sql,
        Effect.gen(function* () {
          const removed = yield* repo.remove([id])
          if (removed.length === 0) return yield* new AutomationNotFound()
          yield* announce(removed, "deleted")
        })
      )
    })

    /** Deletes the automations the resource owns (those created up to now). */
    const removeOwnedBy = traced("Automations.removeOwnedBy")(function* (resourceId: string) {
      const owned = yield* repo.relatedTo(resourceId, { ownedOnly: true, createdBefore: yield* now })
      yield* inTransaction(
        sql,
        Effect.gen(function* () {
          const removed = yield* repo.remove(owned.map((a) => a.id))
          if (removed.length > 0) yield* announce(removed, "deleted")
        })
      )
    })

    return { create, replace, setEnabled, remove, removeOwnedBy } as const
  }),
  dependencies: [
    AutomationChanges.Default,
    AutomationsRepo.Default,
    DeploymentsRepo.Default,
    Events.Default,
    WorkPoolsRepo.Default
  ]
}) {}
