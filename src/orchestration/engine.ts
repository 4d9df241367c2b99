/**
 * The orchestration engine: a proposed state goes through a policy's rules in order; each rule that
 * governs the transition (its from- and to-state types match) may accept it, change it, reject it
 * (optionally in favour of another state), delay it (WAIT) or abort it. A rule whose transition was
 * already changed by an earlier rule no longer applies. The engine is pure: the run, the states and
 * "now" come in, a decision comes out; the caller stores it.
 */
import { type StateDetails, type StateType, StateType as StateTypeSchema } from "../domain/states.ts"

/** A state as the rules see it (a stored one, or the one proposed). */
export interface RuleState {
  readonly type: StateType
  readonly name: string | null
  readonly message: string | null
  readonly data: unknown
  readonly state_details: StateDetails
  /** Set for stored states. */
  readonly timestamp?: Date
}

export interface RunPolicy {
  readonly max_retries: number
  readonly retry_delay_seconds: number
  readonly retries: number | null
  readonly retry_delay: number | null
  readonly pause_keys: ReadonlyArray<string> | null
  readonly resuming: boolean | null
  readonly retry_type: "in_process" | "reschedule" | null
}

/** What every policy reads of a run; each kind of run adds its own facts. */
export interface RuleRunBase {
  readonly run_count: number
  readonly empirical_policy: object
}

/** The flow run fields the flow rules read. */
export interface RuleRun extends RuleRunBase {
  readonly deployment_id: string | null
  readonly infrastructure_pid: string | null
  readonly parent_task_run_id: string | null
  readonly empirical_policy: RunPolicy
}

export type Decision =
  | { readonly status: "ACCEPT"; readonly details: { readonly type: "accept_details" } }
  | { readonly status: "REJECT"; readonly details: { readonly type: "reject_details"; readonly reason: string | null } }
  | {
    readonly status: "WAIT"
    readonly details: { readonly type: "wait_details"; readonly delay_seconds: number; readonly reason: string | null }
  }
  | { readonly status: "ABORT"; readonly details: { readonly type: "abort_details"; readonly reason: string | null } }

export interface TransitionContext<Run extends RuleRunBase = RuleRun> {
  readonly now: Date
  readonly initial: RuleState | null
  /** null once a rule rejects without a replacement, delays or aborts: nothing is written. */
  proposed: RuleState | null
  decision: Decision
  /** The run's policy after the transition (rules update retry/pause bookkeeping here). */
  policy: Run["empirical_policy"]
  /** Policy fields set once the global bookkeeping has run (the reference's after-transition hooks). */
  policyAfter: Partial<Run["empirical_policy"]>
  /** The run starts counting its runs afresh (a task rerun out of a terminal state). */
  resetRunCount: boolean
  readonly run: Run
}

export interface Rule<Run extends RuleRunBase = RuleRun> {
  readonly name: string
  readonly from: ReadonlySet<StateType | null>
  readonly to: ReadonlySet<StateType | null>
  readonly before: (context: TransitionContext<Run>) => void
}

export const ALL_STATES: ReadonlySet<StateType | null> = new Set<StateType | null>([...StateTypeSchema.literals, null])

export const TERMINAL_STATES: ReadonlySet<StateType | null> = new Set<StateType | null>([
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "CRASHED"
])

export const states = (...types: ReadonlyArray<StateType>): ReadonlySet<StateType | null> => new Set(types)

/** Result data that points at stored results (anything but an "unpersisted" marker). */
export const hasPersistedResult = (data: unknown): boolean =>
  typeof data === "object" && data !== null && !Array.isArray(data) && (data as { type?: unknown }).type !== "unpersisted"

/** Outcomes a rule applies to the context. */
export const reject = (context: TransitionContext<any>, replacement: RuleState | null, reason: string) => {
  context.proposed = replacement
  context.decision = { status: "REJECT", details: { type: "reject_details", reason } }
}

export const wait = (context: TransitionContext<any>, delaySeconds: number, reason: string) => {
  context.proposed = null
  context.decision = { status: "WAIT", details: { type: "wait_details", delay_seconds: delaySeconds, reason } }
}

export const abort = (context: TransitionContext<any>, reason: string) => {
  context.proposed = null
  context.decision = { status: "ABORT", details: { type: "abort_details", reason } }
}

/**
 * A background service's guard, first in its rules: the transition happens only while the run is
 * still as the service found it (`still`, read with the run's row locked), else it is aborted and
 * nothing is written. Two passes that overlap (two replicas during a failover) then change each run
 * once.
 */
export const onlyWhile = <Run extends RuleRunBase>(
  name: string,
  still: (initial: RuleState | null, now: Date, proposed: RuleState) => boolean
): Rule<Run> => ({
  name,
  from: ALL_STATES,
  to: ALL_STATES,
  before: (context) => {
    if (context.proposed !== null && !still(context.initial, context.now, context.proposed)) {
      abort(context, "The run changed since the service found it.")
    }
  }
})

/** The states of a run that has not finished. */
export const UNFINISHED_STATES: ReadonlySet<StateType | null> = new Set<StateType | null>(["SCHEDULED", "PENDING", "RUNNING", "PAUSED", "CANCELLING"])

export interface Outcome<Run extends RuleRunBase = RuleRun> {
  readonly decision: Decision
  /** The state to store, or null when nothing is written. */
  readonly proposed: RuleState | null
  readonly policy: Run["empirical_policy"]
  readonly policyAfter: Partial<Run["empirical_policy"]>
  readonly resetRunCount: boolean
}

/** Runs `proposed` through `rules` and says what happens. */
export const orchestrate = <Run extends RuleRunBase>(
  rules: ReadonlyArray<Rule<Run>>,
  input: { readonly now: Date; readonly run: Run; readonly initial: RuleState | null; readonly proposed: RuleState }
): Outcome<Run> => {
  const fromType = input.initial?.type ?? null
  const toType = input.proposed.type
  const context: TransitionContext<Run> = {
    now: input.now,
    initial: input.initial,
    proposed: { ...input.proposed, state_details: { ...input.proposed.state_details } },
    decision: { status: "ACCEPT", details: { type: "accept_details" } },
    policy: input.run.empirical_policy,
    policyAfter: {},
    resetRunCount: false,
    run: input.run
  }
  for (const rule of rules) {
    if (!rule.from.has(fromType) || !rule.to.has(toType)) continue
    // An earlier rule changed the transition this rule was chosen for: it no longer applies.
    if ((context.proposed?.type ?? null) !== toType) continue
    rule.before(context)
  }
  return {
    decision: context.decision,
    proposed: context.proposed,
    policy: context.policy,
    policyAfter: context.policyAfter,
    resetRunCount: context.resetRunCount
  }
}

/** Pending keeps the time the run was scheduled for (flow and task runs alike). */
export const copyScheduledTime = <Run extends RuleRunBase>(): Rule<Run> => ({
  name: "CopyScheduledTime",
  from: states("SCHEDULED"),
  to: states("PENDING"),
  before: (context) => {
    const proposed = context.proposed!
    if (proposed.state_details.scheduled_time === null) {
      context.proposed = {
        ...proposed,
        state_details: { ...proposed.state_details, scheduled_time: context.initial!.state_details.scheduled_time }
      }
    }
  }
})

/** A run may not start before its scheduled time: WAIT for the rest of it (flow and task runs alike). */
export const waitForScheduledTime = <Run extends RuleRunBase>(): Rule<Run> => ({
  name: "WaitForScheduledTime",
  from: states("SCHEDULED", "PENDING"),
  to: states("RUNNING"),
  before: (context) => {
    const scheduled = context.initial!.state_details.scheduled_time
    if (scheduled === null) return
    const delaySeconds = Math.round((scheduled.getTime() - context.now.getTime()) / 1000)
    if (delaySeconds > 0) wait(context, delaySeconds, "Scheduled time is in the future")
  }
})
