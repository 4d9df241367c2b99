/**
 * The rules task-run transitions go through, in the reference's order. Tag concurrency limits arrive
 * with concurrency limits.
 */
import { emptyStateDetails } from "../domain/states.ts"
import {
  abort,
  ALL_STATES,
  copyScheduledTime,
  hasPersistedResult,
  reject,
  type Rule,
  type RuleRunBase,
  type RuleState,
  states,
  TERMINAL_STATES,
  waitForScheduledTime
} from "./engine.ts"

export interface TaskRulePolicy {
  readonly retries: number | null
  readonly retry_delay: number | ReadonlyArray<number> | null
  readonly retry_jitter_factor: number | null
}

/** What the task rules read: the task run, its flow run, and a cached state for the proposed key. */
export interface TaskRuleRun extends RuleRunBase {
  readonly empirical_policy: TaskRulePolicy
  readonly flow_run_run_count: number
  readonly flow_run: {
    readonly id: string
    readonly state_type: RuleState["type"] | null
    readonly run_count: number
    readonly pause_timeout: Date | null
    readonly pause_reschedule: boolean
  } | null
  /** The newest unexpired Completed state cached under the proposed cache key, if any. */
  readonly cached: RuleState | null
  readonly max_cache_key_length: number
  /** Random in [0, 1) for retry jitter, so the rules stay pure. */
  readonly jitter: number
}

const rename = (context: { proposed: RuleState | null }, name: string) => {
  if (context.proposed !== null) context.proposed = { ...context.proposed, name }
}

/** A task whose result is cached for this key completes at once with the cached result. */
const cacheRetrieval: Rule<TaskRuleRun> = {
  name: "CacheRetrieval",
  from: ALL_STATES,
  to: states("RUNNING"),
  before: (context) => {
    const proposed = context.proposed!
    if (proposed.state_details.cache_key === null || proposed.state_details.refresh_cache === true) return
    const cached = context.run.cached
    if (cached !== null) {
      reject(context, { ...cached, name: "Cached", state_details: { ...cached.state_details } }, "Retrieved state from cache")
    }
  }
}

const handleTaskTerminalStateTransitions: Rule<TaskRuleRun> = {
  name: "HandleTaskTerminalStateTransitions",
  from: TERMINAL_STATES,
  to: ALL_STATES,
  before: (context) => {
    const initial = context.initial!
    const proposed = context.proposed!
    if (proposed.type === "CANCELLING" || proposed.type === "PAUSED" || proposed.type === "CRASHED") {
      return abort(context, `Run is already ${initial.type}.`)
    }
    if (initial.type === "COMPLETED" && hasPersistedResult(initial.data)) {
      return reject(context, null, "This run is already completed.")
    }
    if (!TERMINAL_STATES.has(proposed.type)) context.resetRunCount = true
    const flowRun = context.run.flow_run
    if (proposed.type === "RUNNING" && flowRun !== null && context.run.flow_run_run_count < flowRun.run_count) {
      rename(context, "Retrying")
    }
  }
}

/** Tasks run only inside a running flow run. */
const preventRunningTasksFromStoppedFlows: Rule<TaskRuleRun> = {
  name: "PreventRunningTasksFromStoppedFlows",
  from: ALL_STATES,
  to: states("RUNNING"),
  before: (context) => {
    const flowRun = context.run.flow_run
    if (flowRun === null) return
    if (flowRun.state_type === null) return abort(context, "The enclosing flow must be running to begin task execution.")
    if (flowRun.state_type === "PAUSED") {
      return reject(
        context,
        {
          type: "PAUSED",
          name: "NotReady",
          message: null,
          data: null,
          state_details: { ...emptyStateDetails, pause_timeout: flowRun.pause_timeout, pause_reschedule: flowRun.pause_reschedule }
        },
        `The flow is paused, new tasks can execute after resuming flow run: ${flowRun.id}.`
      )
    }
    if (flowRun.state_type !== "RUNNING") abort(context, "The enclosing flow must be running to begin task execution.")
  }
}

/**
 * A failing task with retries left waits its retry delay (the n-th entry of a list of delays), with
 * jitter when the policy asks for it, as AwaitingRetry.
 */
const retryFailedTasks: Rule<TaskRuleRun> = {
  name: "RetryFailedTasks",
  from: states("RUNNING"),
  to: states("FAILED"),
  before: (context) => {
    const policy = context.run.empirical_policy
    const runCount = context.run.run_count
    const delays = policy.retry_delay
    const base = Array.isArray(delays) ? (delays[Math.min(runCount - 1, delays.length - 1)] ?? 0) : ((delays as number | null) ?? 0)
    const factor = policy.retry_jitter_factor
    // Jitter spreads the delay over [base, base * (1 + factor)].
    const delay = factor && base > 0 ? base * (1 + factor * context.run.jitter) : base
    const proposed = context.proposed!
    if (proposed.state_details.retriable === false) return
    if (policy.retries !== null && runCount <= policy.retries) {
      reject(
        context,
        {
          type: "SCHEDULED",
          name: "AwaitingRetry",
          message: proposed.message,
          data: proposed.data,
          state_details: { ...emptyStateDetails, scheduled_time: new Date(context.now.getTime() + delay * 1000) }
        },
        "Retrying"
      )
    }
  }
}

/** A task that runs again is Retrying (after AwaitingRetry) or Rerunning. */
const renameReruns: Rule<TaskRuleRun> = {
  name: "RenameReruns",
  from: ALL_STATES,
  to: states("RUNNING"),
  before: (context) => {
    if (context.initial === null || context.run.run_count === 0) return
    rename(context, context.initial.name === "AwaitingRetry" ? "Retrying" : "Rerunning")
  }
}

/** Cache keys longer than the server allows are refused. */
const cacheInsertion: Rule<TaskRuleRun> = {
  name: "CacheInsertion",
  from: ALL_STATES,
  to: states("COMPLETED"),
  before: (context) => {
    const key = context.proposed?.state_details.cache_key
    if (key && key.length > context.run.max_cache_key_length) {
      reject(
        context,
        context.proposed,
        `Cache key exceeded maximum allowed length of ${context.run.max_cache_key_length} characters.`
      )
    }
  }
}

export const coreTaskPolicy: ReadonlyArray<Rule<TaskRuleRun>> = [
  cacheRetrieval,
  handleTaskTerminalStateTransitions,
  preventRunningTasksFromStoppedFlows,
  copyScheduledTime<TaskRuleRun>(),
  waitForScheduledTime<TaskRuleRun>(),
  retryFailedTasks,
  renameReruns,
  cacheInsertion
]

/** Forced task transitions apply no rules. */
export const minimalTaskPolicy: ReadonlyArray<Rule<TaskRuleRun>> = []
