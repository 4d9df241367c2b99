/**
 * The orchestration rules that take and give back concurrency slots, run inside a transition's
 * transaction after the pure policy has decided:
 *
 * - a deployment's run moving to Pending takes a slot of the deployment's limit under a lease, or
 *   waits (AwaitingConcurrencySlot, ENQUEUE) or is cancelled (CANCEL_NEW) when the limit is full;
 *   moving to Running keeps (renews) its lease, or takes a slot anew if the lease lapsed; leaving
 *   Pending, Running and Cancelling for any other state gives the slot back;
 * - a task run moving to Running takes a slot of every `tag:<tag>` limit of its tags, or waits;
 *   leaving Running (Cancelling aside) gives them back.
 */
import { Effect, Option } from "effect"
import { DeploymentsRepo } from "../deployments/repo.ts"
import { emptyStateDetails, type State, type StateType } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import type { Decision, Outcome, RuleRunBase, RuleState } from "../orchestration/engine.ts"
import { Settings } from "../settings/settings.ts"
import { ConcurrencyLimitsRepo } from "./repo.ts"
import { clampedPoissonInterval, ConcurrencySlots, LONG_LEASE_SECONDS } from "./slots.ts"

const HOLDING: ReadonlySet<StateType> = new Set(["PENDING", "RUNNING", "CANCELLING"])

const accepted = (outcome: Outcome<any>) => outcome.decision.status === "ACCEPT" && outcome.proposed !== null

const decide = <Run extends RuleRunBase>(outcome: Outcome<Run>, decision: Decision, proposed: RuleState | null): Outcome<Run> => ({
  ...outcome,
  decision,
  proposed
})

const reject = (reason: string): Decision => ({ status: "REJECT", details: { type: "reject_details", reason } })
const abort = (reason: string): Decision => ({ status: "ABORT", details: { type: "abort_details", reason } })

const state = (type: StateType, name: string, message: string | null, scheduled: Date | null = null): RuleState => ({
  type,
  name,
  message,
  data: null,
  state_details: { ...emptyStateDetails, scheduled_time: scheduled }
})

/** A deployment's columns the concurrency rules read. */
export interface DeploymentConcurrency {
  readonly concurrency_limit_id: string | null
  readonly concurrency_options: { readonly collision_strategy?: string | null; readonly grace_period_seconds?: number | null } | null
}

/** A flow run as the rules see it, read with its deployment's concurrency columns when it can be. */
export interface FlowRunConcurrency {
  readonly deployment_id: string | null
  readonly deployment_concurrency?: DeploymentConcurrency | null
}

/**
 * Whether no transition of this flow run can take or give back a deployment slot: it has no
 * deployment, or its deployment (read with it) has no limit and its state holds no lease. Then
 * secureFlow and releaseFlow touch nothing, and its transitions need no lock but on its own row.
 */
export const flowHoldsNoSlots = (
  run: FlowRunConcurrency & { readonly state: { readonly state_details: unknown } | null }
) => {
  if (run.deployment_id === null) return true
  const details = run.state?.state_details as { readonly deployment_concurrency_lease_id?: string | null } | null | undefined
  return run.deployment_concurrency != null && run.deployment_concurrency.concurrency_limit_id === null &&
    (details?.deployment_concurrency_lease_id ?? null) === null
}

/** The columns FlowRunConcurrency adds to a flow run read as `r`. */
export const deploymentConcurrencyColumn = `, (SELECT jsonb_build_object('concurrency_limit_id', d.concurrency_limit_id,
    'concurrency_options', d.concurrency_options) FROM deployment d WHERE d.id = r.deployment_id) AS deployment_concurrency`

/**
 * What a flow run's lock-free transition checks when it is stored (RunStatesRepo's lockFreeGuard):
 * its deployment still has no concurrency limit, as `flowHoldsNoSlots` found it.
 */
export const deploymentStillWithoutLimit =
  "NOT EXISTS (SELECT 1 FROM deployment d WHERE d.id = flow_run.deployment_id AND d.concurrency_limit_id IS NOT NULL)"

const withLease = (proposed: RuleState, leaseId: string | null): RuleState => ({
  ...proposed,
  state_details: { ...proposed.state_details, deployment_concurrency_lease_id: leaseId }
})

export class ConcurrencyRules extends Effect.Service<ConcurrencyRules>()("baton/ConcurrencyRules", {
  effect: Effect.gen(function* () {
    const slots = yield* ConcurrencySlots
    const limits = yield* ConcurrencyLimitsRepo
    const deployments = yield* DeploymentsRepo
    const settings = yield* Settings
    const initialLease = settings.server.concurrency.initial_deployment_lease_duration
    const slotWait = settings.server.deployments.concurrency_slot_wait_seconds
    const tagWait = settings.server.tasks.tag_concurrency_slot_wait_seconds

    /**
     * The deployment's limit and how long its leases last; from `known` when the run was read with
     * its deployment's concurrency columns (null: no such deployment).
     */
    const deploymentLimit = (deploymentId: string, known?: DeploymentConcurrency | null) =>
      Effect.gen(function* () {
        const deployment = known !== undefined ? known : Option.getOrUndefined(yield* deployments.findRow(deploymentId))
        if (deployment === undefined || deployment === null) return { found: false as const }
        const limit = deployment.concurrency_limit_id === null ? undefined : Option.getOrUndefined(yield* limits.find(deployment.concurrency_limit_id))
        const options = deployment.concurrency_options
        return {
          found: true as const,
          limit,
          strategy: options?.collision_strategy ?? "ENQUEUE",
          ttl: options?.grace_period_seconds ?? initialLease
        }
      })

    /** A flow run's transition: takes or keeps its deployment's slot when it moves to Pending or Running. */
    const secureFlow = <Run extends RuleRunBase>(
      run: FlowRunConcurrency & { readonly id: string },
      outcome: Outcome<Run>,
      initial: State | null
    ) =>
      Effect.gen(function* () {
        if (!accepted(outcome) || run.deployment_id === null) return outcome
        const proposed = outcome.proposed!
        const from = initial?.type ?? null
        const toPending = proposed.type === "PENDING" && (from === null || !HOLDING.has(from))
        const toRunning = proposed.type === "RUNNING" && from === "PENDING"
        if (!toPending && !toRunning) return outcome
        const found = yield* deploymentLimit(run.deployment_id, run.deployment_concurrency)
        if (!found.found) return toPending ? decide(outcome, abort("Deployment not found."), null) : outcome
        const limit = found.limit
        if (limit === undefined) return outcome
        if (toRunning) {
          // A lease kept from Pending is renewed; one that lapsed meanwhile is taken anew, if there is room.
          const leaseId = proposed.state_details.deployment_concurrency_lease_id
          if (leaseId === null) return outcome
          if (yield* slots.leases.renew(leaseId, found.ttl)) return outcome
          if (yield* slots.take([limit.id], 1)) {
            const lease = yield* slots.lease([limit.id], found.ttl, 1, { type: "flow_run", id: run.id })
            return decide(outcome, outcome.decision, withLease(proposed, lease.id))
          }
          return decide(
            outcome,
            reject("Deployment concurrency limit reached after lease expiry."),
            state("CANCELLED", "Cancelled", "Deployment concurrency slot lost during provisioning - no slots available to continue execution")
          )
        }
        if (limit.limit === 0) {
          return decide(outcome, abort("The deployment concurrency limit is 0. The flow will deadlock if submitted again."), null)
        }
        if (yield* slots.take([limit.id], 1)) {
          const lease = yield* slots.lease([limit.id], found.ttl, 1, null)
          return decide(outcome, outcome.decision, withLease(proposed, lease.id))
        }
        const at = yield* now
        return decide(
          outcome,
          reject("Deployment concurrency limit reached."),
          found.strategy === "CANCEL_NEW"
            ? state("CANCELLED", "Cancelled", "Deployment concurrency limit reached.")
            : state("SCHEDULED", "AwaitingConcurrencySlot", null, new Date(at.getTime() + slotWait * 1000))
        )
      })

    /**
     * Gives back a run's slot of its deployment's limit: what its lease holds (nothing when the lease
     * is gone: the repossessor gave its slot back already), or one slot for a run without a lease.
     */
    const giveBack = (deploymentId: string, leaseId: string | null, known?: DeploymentConcurrency | null) =>
      Effect.gen(function* () {
        if (leaseId !== null) return yield* slots.release(leaseId)
        const found = yield* deploymentLimit(deploymentId, known)
        if (found.found && found.limit !== undefined) yield* limits.decrement([found.limit.id], 1)
      })

    /** After a flow run's state is stored: leaving Pending, Running or Cancelling gives its slot back. */
    const releaseFlow = (run: FlowRunConcurrency, validated: State, initial: State | null) =>
      run.deployment_id === null || initial === null || !HOLDING.has(initial.type) || HOLDING.has(validated.type)
        ? Effect.void
        : giveBack(run.deployment_id, initial.state_details.deployment_concurrency_lease_id, run.deployment_concurrency)

    /** A flow run deleted while holding a slot gives it back. */
    const releaseDeletedFlow = (run: {
      readonly deployment_id: string | null
      readonly state_type: StateType | null
      readonly lease_id: string | null
    }) =>
      run.deployment_id === null || run.state_type === null || !HOLDING.has(run.state_type)
        ? Effect.void
        : giveBack(run.deployment_id, run.lease_id)

    /** The `tag:` limits of a task's tags. */
    const tagLimits = (tags: ReadonlyArray<string>) =>
      tags.length === 0 ? Effect.succeed([]) : limits.readByNames(tags.map((t) => `tag:${t}`))

    /** A task run moving to Running takes a slot of each of its tags' limits, or waits. */
    const secureTask = <Run extends RuleRunBase>(
      run: { readonly id: string; readonly tags: ReadonlyArray<string> },
      outcome: Outcome<Run>
    ) =>
      Effect.gen(function* () {
        if (!accepted(outcome) || outcome.proposed!.type !== "RUNNING") return outcome
        const active = (yield* tagLimits(run.tags)).filter((l) => l.active)
        const zero = active.find((l) => l.limit === 0)
        if (zero !== undefined) {
          return decide(
            outcome,
            abort(`The concurrency limit on tag "${zero.name.slice(4)}" is 0 and will deadlock if the task tries to run again.`),
            null
          )
        }
        if (active.length === 0) return outcome
        if (yield* slots.take(active.map((l) => l.id), 1)) {
          yield* slots.lease(active.map((l) => l.id), LONG_LEASE_SECONDS, 1, { type: "task_run", id: run.id })
          return outcome
        }
        const blocking = active.reduce((a, b) => (b.decayed_active_slots / b.limit > a.decayed_active_slots / a.limit ? b : a))
        const delay = Math.round(yield* clampedPoissonInterval(Math.min(blocking.avg_slot_occupancy_seconds || tagWait, tagWait)))
        return decide(
          outcome,
          {
            status: "WAIT",
            details: {
              type: "wait_details",
              delay_seconds: delay,
              reason: `Concurrency limit reached for tags: ${active.map((l) => l.name.slice(4)).join(", ")}`
            }
          },
          null
        )
      })

    /** After a task run's state is stored: out of Running (Cancelling aside), its tag slots go back. */
    const releaseTask = (run: { readonly id: string; readonly tags: ReadonlyArray<string> }, validated: State) =>
      Effect.gen(function* () {
        if (validated.type === "RUNNING" || validated.type === "CANCELLING") return
        for (const limit of yield* tagLimits(run.tags)) {
          for (const leaseId of yield* slots.heldBy(limit.id, run.id)) yield* slots.release(leaseId)
        }
      })

    return { secureFlow, releaseFlow, releaseDeletedFlow, secureTask, releaseTask } as const
  }),
  dependencies: [ConcurrencyLimitsRepo.Default, ConcurrencySlots.Default, DeploymentsRepo.Default]
}) {}
