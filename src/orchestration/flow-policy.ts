/**
 * The rules flow-run transitions go through, in the reference's order. Concurrency rules arrive with
 * concurrency limits; pausing and resuming with their endpoints.
 */
import { emptyStateDetails } from "../domain/states.ts"
import {
  abort,
  ALL_STATES,
  copyScheduledTime,
  hasPersistedResult,
  reject,
  type Rule,
  type RuleRun,
  type RuleState,
  states,
  TERMINAL_STATES,
  waitForScheduledTime
} from "./engine.ts"

const cancelled = (): RuleState => ({
  type: "CANCELLED",
  name: "Cancelled",
  message: null,
  data: null,
  state_details: emptyStateDetails
})

/**
 * A run keeps its deployment concurrency lease through states that do not name it (workers send
 * none when they re-propose Pending), so the slot can be given back later.
 */
const preserveDeploymentConcurrencyLeaseId: Rule = {
  name: "PreserveDeploymentConcurrencyLeaseId",
  from: ALL_STATES,
  to: ALL_STATES,
  before: (context) => {
    const lease = context.initial?.state_details.deployment_concurrency_lease_id ?? null
    const proposed = context.proposed
    if (lease === null || proposed === null || proposed.state_details.deployment_concurrency_lease_id !== null) return
    context.proposed = { ...proposed, state_details: { ...proposed.state_details, deployment_concurrency_lease_id: lease } }
  }
}

/** A client retrying a request never applies the same transition twice. */
const preventDuplicateTransitions: Rule = {
  name: "PreventDuplicateTransitions",
  from: ALL_STATES,
  to: ALL_STATES,
  before: (context) => {
    const initialId = context.initial?.state_details.transition_id ?? null
    const proposedId = context.proposed?.state_details.transition_id ?? null
    if (initialId !== null && proposedId !== null && initialId === proposedId) {
      reject(context, null, "This run has already made this state transition.")
    }
  }
}

/** Leaving a terminal state is only possible for a rerun of a deployment's run. */
const handleFlowTerminalStateTransitions: Rule = {
  name: "HandleFlowTerminalStateTransitions",
  from: TERMINAL_STATES,
  to: ALL_STATES,
  before: (context) => {
    const initial = context.initial!
    const proposed = context.proposed!
    if (proposed.type === "CANCELLING" || proposed.type === "PAUSED" || proposed.type === "CRASHED") {
      return abort(context, `Run is already in terminal state ${initial.type}.`)
    }
    const final = TERMINAL_STATES.has(proposed.type)
    if (initial.type === "COMPLETED" && !final && hasPersistedResult(initial.data)) {
      return reject(context, null, "Run is already COMPLETED.")
    }
    if (
      initial.type === "COMPLETED" && proposed.type === "COMPLETED" && hasPersistedResult(initial.data) &&
      !hasPersistedResult(proposed.data)
    ) {
      return reject(
        context,
        null,
        "Cannot overwrite a COMPLETED state that carries persisted result data with one that does not."
      )
    }
    if (proposed.type === "SCHEDULED" && context.run.deployment_id === null) {
      return abort(context, "Cannot reschedule a run without an associated deployment.")
    }
    if (!final) {
      context.policy = {
        ...context.policy,
        resuming: false,
        pause_keys: [],
        retry_type: proposed.type === "SCHEDULED" ? "reschedule" : null
      }
    }
  }
}

/** A cancelling run can only end Cancelled. */
const enforceCancellingToCancelledTransition: Rule = {
  name: "EnforceCancellingToCancelledTransition",
  from: states("CANCELLING"),
  to: new Set([...ALL_STATES].filter((type) => type !== "CANCELLED")),
  before: (context) =>
    reject(context, null, "Cannot transition flows that are cancelling to a state other than Cancelled.")
}

/** Runs that never started anything have nothing to stop: cancel them straight away. */
const bypassCancellingFlowRunsWithNoInfra: Rule = {
  name: "BypassCancellingFlowRunsWithNoInfra",
  from: states("SCHEDULED", "PAUSED"),
  to: states("CANCELLING"),
  before: (context) => {
    const initial = context.initial!
    if ((initial.type === "SCHEDULED" && context.run.infrastructure_pid === null) || initial.name === "Resuming") {
      reject(context, cancelled(), "Scheduled flow run has no infrastructure to terminate.")
    } else if (initial.type === "PAUSED" && initial.state_details.pause_reschedule) {
      reject(context, cancelled(), "Suspended flow run has no infrastructure to terminate.")
    }
  }
}

/** Only one client may move a run to Pending: a second one is told to stop. */
const preventPendingTransitions: Rule = {
  name: "PreventPendingTransitions",
  from: states("PENDING", "CANCELLING", "RUNNING", "CANCELLED"),
  to: states("PENDING"),
  before: (context) => {
    const initial = context.initial!
    const proposed = context.proposed!
    if (initial.type === "PENDING" && initial.name !== proposed.name && proposed.name !== "Pending") {
      context.proposed = {
        ...proposed,
        state_details: {
          ...proposed.state_details,
          scheduled_time: initial.state_details.scheduled_time,
          deployment_concurrency_lease_id: initial.state_details.deployment_concurrency_lease_id
        }
      }
      return
    }
    abort(context, `This run is in a ${initial.type} state and cannot transition to a PENDING state.`)
  }
}

/** "Late" is a Scheduled state, and only a scheduled run becomes late, once. */
const ensureOnlyScheduledFlowsMarkedLate: Rule = {
  name: "EnsureOnlyScheduledFlowsMarkedLate",
  from: ALL_STATES,
  to: states("SCHEDULED"),
  before: (context) => {
    const initial = context.initial
    if (initial === null || context.proposed?.name !== "Late") return
    if (initial.type !== "SCHEDULED") reject(context, null, "Only scheduled flows can be marked late.")
    else if (initial.name === "Late") reject(context, null, "This flow run is already marked late.")
  }
}

const verbOf = (proposed: RuleState | null) => (proposed?.name === "Suspended" ? "suspend" : "pause")

/** Only a running flow pauses, once per pause key; suspending needs a deployment to resume from. */
const handlePausingFlows: Rule = {
  name: "HandlePausingFlows",
  from: ALL_STATES,
  to: states("PAUSED"),
  before: (context) => {
    const verb = verbOf(context.proposed)
    const initial = context.initial
    if (initial === null) return abort(context, `Cannot ${verb} flows with no state.`)
    if (initial.type !== "RUNNING") return reject(context, null, `Cannot ${verb} flows that are not currently running.`)
    const proposed = context.proposed!
    const key = proposed.state_details.pause_key ?? crypto.randomUUID()
    const keys = context.policy.pause_keys ?? []
    if (keys.includes(key)) return reject(context, null, `This ${verb} has already fired.`)
    if (proposed.state_details.pause_reschedule) {
      if (context.run.parent_task_run_id !== null) return abort(context, `Cannot ${verb} subflows.`)
      if (context.run.deployment_id === null) return abort(context, `Cannot ${verb} flows without a deployment.`)
    }
    context.policy = { ...context.policy, pause_keys: [...keys, key] }
  }
}

/** A paused run leaves Paused only to run, be rescheduled or end; past its timeout it fails. */
const handleResumingPausedFlows: Rule = {
  name: "HandleResumingPausedFlows",
  from: states("PAUSED"),
  to: ALL_STATES,
  before: (context) => {
    const initial = context.initial!
    const proposed = context.proposed!
    if (!(proposed.type === "RUNNING" || proposed.type === "SCHEDULED" || TERMINAL_STATES.has(proposed.type))) {
      return reject(
        context,
        null,
        `This run cannot transition to the StateType.${proposed.type} state from the StateType.${initial.type} state.`
      )
    }
    const verb = verbOf(proposed)
    const display = (proposed.name ?? proposed.type).toLowerCase()
    if (initial.state_details.pause_reschedule && context.run.deployment_id === null) {
      return reject(context, null, `Cannot reschedule a ${display} flow run without a deployment.`)
    }
    const timeout = initial.state_details.pause_timeout
    if (timeout !== null && timeout < context.now) {
      return reject(
        context,
        {
          type: "FAILED",
          name: "Failed",
          message: `The flow was ${display} and never resumed.`,
          data: null,
          state_details: emptyStateDetails
        },
        `The flow run ${verb} has timed out and can no longer resume.`
      )
    }
    // Set after the bookkeeping: the transition that resumes still counts as a run.
    context.policyAfter = { resuming: true }
  }
}

/** A failing run with retries left is rescheduled as AwaitingRetry after its retry delay. */
const retryFailedFlows: Rule = {
  name: "RetryFailedFlows",
  from: states("RUNNING"),
  to: states("FAILED"),
  before: (context) => {
    const policy = context.run.empirical_policy
    if (policy.retries === null || context.run.run_count > policy.retries) {
      context.policy = { ...context.policy, retry_type: null }
      return
    }
    const proposed = context.proposed!
    context.policy = { ...context.policy, resuming: false, pause_keys: [], retry_type: "in_process" }
    reject(
      context,
      {
        type: "SCHEDULED",
        name: "AwaitingRetry",
        message: proposed.message,
        data: proposed.data,
        state_details: {
          ...emptyStateDetails,
          scheduled_time: new Date(context.now.getTime() + (policy.retry_delay ?? 0) * 1000)
        }
      },
      "Retrying"
    )
  }
}

/** The core flow policy, for ordinary transitions. */
export const coreFlowPolicy: ReadonlyArray<Rule> = [
  preserveDeploymentConcurrencyLeaseId,
  preventDuplicateTransitions,
  handleFlowTerminalStateTransitions,
  enforceCancellingToCancelledTransition,
  bypassCancellingFlowRunsWithNoInfra,
  preventPendingTransitions,
  ensureOnlyScheduledFlowsMarkedLate,
  handlePausingFlows,
  handleResumingPausedFlows,
  copyScheduledTime<RuleRun>(),
  waitForScheduledTime<RuleRun>(),
  retryFailedFlows
]

/** Marking an overdue run Late (the late-runs service). */
export const markLateRunsPolicy: ReadonlyArray<Rule> = [ensureOnlyScheduledFlowsMarkedLate]

/** What still applies when a transition is forced. */
export const minimalFlowPolicy: ReadonlyArray<Rule> = [preserveDeploymentConcurrencyLeaseId, bypassCancellingFlowRunsWithNoInfra]
