import { describe, expect, it } from "@effect/vitest"
import { emptyStateDetails, type StateType } from "../../src/domain/states.ts"
import { orchestrate, type RuleRun, type RuleState } from "../../src/orchestration/engine.ts"
import { coreFlowPolicy, minimalFlowPolicy } from "../../src/orchestration/flow-policy.ts"

const NOW = new Date("2026-01-01T12:00:00.000Z")
const inSeconds = (s: number) => new Date(NOW.getTime() + s * 1000)

const run = (overrides: Partial<RuleRun> = {}): RuleRun => ({
  run_count: 1,
  deployment_id: null,
  infrastructure_pid: null,
  parent_task_run_id: null,
  empirical_policy: {
    max_retries: 0,
    retry_delay_seconds: 0,
    retries: null,
    retry_delay: null,
    pause_keys: [],
    resuming: false,
    retry_type: null
  },
  ...overrides
})

const st = (type: StateType, extra: Partial<RuleState> = {}, details: Partial<RuleState["state_details"]> = {}): RuleState => ({
  type,
  name: type.charAt(0) + type.slice(1).toLowerCase(),
  message: null,
  data: null,
  state_details: { ...emptyStateDetails, ...details },
  ...extra
})

const decide = (initial: RuleState | null, proposed: RuleState, r: RuleRun = run(), force = false) =>
  orchestrate(force ? minimalFlowPolicy : coreFlowPolicy, { now: NOW, run: r, initial, proposed })

describe("core flow policy", () => {
  // [from, to, expected status] for ordinary transitions that pass untouched.
  const accepted: ReadonlyArray<readonly [StateType | null, StateType]> = [
    [null, "PENDING"],
    [null, "SCHEDULED"],
    ["SCHEDULED", "PENDING"],
    ["PENDING", "RUNNING"],
    ["RUNNING", "COMPLETED"],
    ["RUNNING", "FAILED"],
    ["RUNNING", "CANCELLING"],
    ["CANCELLING", "CANCELLED"],
    ["RUNNING", "CRASHED"],
    ["RUNNING", "PAUSED"],
    ["COMPLETED", "COMPLETED"],
    ["FAILED", "RUNNING"],
    ["CRASHED", "PENDING"]
  ]
  it.each(accepted)("accepts %s → %s", (from, to) => {
    const outcome = decide(from === null ? null : st(from), st(to))
    expect(outcome.decision.status).toBe("ACCEPT")
    expect(outcome.proposed?.type).toBe(to)
  })

  const aborted: ReadonlyArray<readonly [StateType, StateType, string]> = [
    ["PENDING", "PENDING", "This run is in a PENDING state and cannot transition to a PENDING state."],
    ["RUNNING", "PENDING", "This run is in a RUNNING state and cannot transition to a PENDING state."],
    ["COMPLETED", "PAUSED", "Run is already in terminal state COMPLETED."],
    ["FAILED", "CANCELLING", "Run is already in terminal state FAILED."],
    ["CANCELLED", "CRASHED", "Run is already in terminal state CANCELLED."],
    ["COMPLETED", "SCHEDULED", "Cannot reschedule a run without an associated deployment."]
  ]
  it.each(aborted)("aborts %s → %s", (from, to, reason) => {
    const outcome = decide(st(from), st(to))
    expect(outcome.decision).toEqual({ status: "ABORT", details: { type: "abort_details", reason } })
    expect(outcome.proposed).toBeNull()
  })

  it("lets a second Pending with its own name through (a named pending step), keeping the scheduled time", () => {
    const outcome = decide(st("PENDING", {}, { scheduled_time: inSeconds(-5) }), st("PENDING", { name: "Submitting" }))
    expect(outcome.decision.status).toBe("ACCEPT")
    expect(outcome.proposed?.state_details.scheduled_time).toEqual(inSeconds(-5))
  })

  it("waits for a future scheduled time, and starts one that has come", () => {
    const future = decide(st("SCHEDULED", {}, { scheduled_time: inSeconds(30) }), st("RUNNING"))
    expect(future.decision).toEqual({
      status: "WAIT",
      details: { type: "wait_details", delay_seconds: 30, reason: "Scheduled time is in the future" }
    })
    expect(decide(st("PENDING", {}, { scheduled_time: inSeconds(-1) }), st("RUNNING")).decision.status).toBe("ACCEPT")
  })

  it("copies the scheduled time into Pending", () => {
    const outcome = decide(st("SCHEDULED", {}, { scheduled_time: inSeconds(-60) }), st("PENDING"))
    expect(outcome.proposed?.state_details.scheduled_time).toEqual(inSeconds(-60))
  })

  it("retries a failing run while retries are left, after retry_delay", () => {
    const policy = { ...run().empirical_policy, retries: 2, retry_delay: 10 }
    const outcome = decide(st("RUNNING"), st("FAILED", { message: "boom" }), run({ run_count: 2, empirical_policy: policy }))
    expect(outcome.decision).toEqual({ status: "REJECT", details: { type: "reject_details", reason: "Retrying" } })
    expect(outcome.proposed).toMatchObject({ type: "SCHEDULED", name: "AwaitingRetry", message: "boom" })
    expect(outcome.proposed?.state_details.scheduled_time).toEqual(inSeconds(10))
    expect(outcome.policy.retry_type).toBe("in_process")
    const exhausted = decide(st("RUNNING"), st("FAILED"), run({ run_count: 3, empirical_policy: policy }))
    expect(exhausted.decision.status).toBe("ACCEPT")
    expect(exhausted.proposed?.type).toBe("FAILED")
  })

  it("cancels a scheduled run with no infrastructure directly, and cancels through Cancelling otherwise", () => {
    const direct = decide(st("SCHEDULED"), st("CANCELLING"))
    expect(direct.decision).toEqual({
      status: "REJECT",
      details: { type: "reject_details", reason: "Scheduled flow run has no infrastructure to terminate." }
    })
    expect(direct.proposed?.type).toBe("CANCELLED")
    expect(decide(st("SCHEDULED"), st("CANCELLING"), run({ infrastructure_pid: "42" })).decision.status).toBe("ACCEPT")
    const suspended = decide(st("PAUSED", {}, { pause_reschedule: true }), st("CANCELLING"))
    expect(suspended.proposed?.type).toBe("CANCELLED")
  })

  it("rejects leaving Cancelling except to Cancelled", () => {
    expect(decide(st("CANCELLING"), st("PENDING")).decision.status).toBe("REJECT")
    const outcome = decide(st("CANCELLING"), st("COMPLETED"))
    expect(outcome.decision).toEqual({
      status: "REJECT",
      details: { type: "reject_details", reason: "Cannot transition flows that are cancelling to a state other than Cancelled." }
    })
    expect(outcome.proposed).toBeNull()
  })

  it("rejects a repeated transition id", () => {
    const transition_id = "0b1e4c9e-7f0a-4b8e-9c1d-2f3a4b5c6d7e"
    const outcome = decide(st("RUNNING", {}, { transition_id }), st("COMPLETED", {}, { transition_id }))
    expect(outcome.decision).toEqual({
      status: "REJECT",
      details: { type: "reject_details", reason: "This run has already made this state transition." }
    })
  })

  it("keeps a completed run with persisted results completed", () => {
    const persisted = { type: "reference", storage_key: "s3://bucket/key" }
    expect(decide(st("COMPLETED", { data: persisted }), st("RUNNING")).decision.status).toBe("REJECT")
    expect(decide(st("COMPLETED", { data: persisted }), st("COMPLETED")).decision.status).toBe("REJECT")
    expect(decide(st("COMPLETED", { data: { type: "unpersisted" } }), st("RUNNING")).decision.status).toBe("ACCEPT")
  })

  it("marks only scheduled runs late, once", () => {
    expect(decide(st("SCHEDULED"), st("SCHEDULED", { name: "Late" })).decision.status).toBe("ACCEPT")
    expect(decide(st("SCHEDULED", { name: "Late" }), st("SCHEDULED", { name: "Late" })).decision.status).toBe("REJECT")
    expect(decide(st("PENDING"), st("SCHEDULED", { name: "Late" })).decision).toMatchObject({
      status: "REJECT",
      details: { reason: "Only scheduled flows can be marked late." }
    })
  })

  it("a forced transition skips the core rules but still cancels runs with nothing to stop", () => {
    expect(decide(st("RUNNING"), st("PENDING"), run(), true).decision.status).toBe("ACCEPT")
    expect(decide(st("COMPLETED"), st("CRASHED"), run(), true).decision.status).toBe("ACCEPT")
    expect(decide(st("SCHEDULED"), st("CANCELLING"), run(), true).proposed?.type).toBe("CANCELLED")
  })
})
