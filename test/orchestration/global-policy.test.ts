import { describe, expect, it } from "@effect/vitest"
import type { StateType } from "../../src/domain/states.ts"
import { applyGlobalPolicy, type RunClock, type TransitionState } from "../../src/orchestration/global-policy.ts"

const t = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, 0) + seconds * 1000)

const fresh: RunClock = {
  state_type: null,
  state_name: null,
  state_timestamp: null,
  start_time: null,
  end_time: null,
  run_count: 0,
  total_run_time: 0,
  expected_start_time: null,
  next_scheduled_start_time: null,
  resuming: false
}

const state = (type: StateType, at: number, scheduledAt: number | null = null): TransitionState => ({
  type,
  name: type.charAt(0) + type.slice(1).toLowerCase(),
  timestamp: t(at),
  scheduled_time: scheduledAt === null ? null : t(scheduledAt)
})

/** Walks a run through `states` (each the proposal after the previous one). */
const walk = (kind: "flow_run" | "task_run", states: ReadonlyArray<TransitionState>, start: RunClock = fresh) =>
  states.reduce<{ run: RunClock; previous: TransitionState | null }>(
    ({ run, previous }, proposed) => ({ run: applyGlobalPolicy(kind, run, previous, proposed), previous: proposed }),
    { run: start, previous: null }
  ).run

describe("global bookkeeping of a transition", () => {
  it("records the state type, name and timestamp on the run", () => {
    const run = walk("flow_run", [state("PENDING", 0), state("RUNNING", 5)])
    expect(run).toMatchObject({ state_type: "RUNNING", state_name: "Running", state_timestamp: t(5) })
  })

  it("sets next_scheduled_start_time entering SCHEDULED and clears it leaving", () => {
    const scheduled = walk("flow_run", [state("SCHEDULED", 0, 60)])
    expect(scheduled.next_scheduled_start_time).toEqual(t(60))
    const pending = walk("flow_run", [state("SCHEDULED", 0, 60), state("PENDING", 61)])
    expect(pending.next_scheduled_start_time).toBeNull()
  })

  it("sets expected_start_time from the scheduled time, or else the state's time, once", () => {
    expect(walk("flow_run", [state("SCHEDULED", 0, 60)]).expected_start_time).toEqual(t(60))
    expect(walk("flow_run", [state("PENDING", 7)]).expected_start_time).toEqual(t(7))
    expect(walk("flow_run", [state("SCHEDULED", 0, 60), state("PENDING", 61), state("RUNNING", 62)]).expected_start_time)
      .toEqual(t(60))
  })

  it("sets start_time the first time the run runs, and keeps it", () => {
    const run = walk("task_run", [state("PENDING", 0), state("RUNNING", 3), state("FAILED", 4), state("RUNNING", 9)])
    expect(run.start_time).toEqual(t(3))
  })

  it("counts every entry into RUNNING", () => {
    expect(walk("flow_run", [state("PENDING", 0), state("RUNNING", 1)]).run_count).toBe(1)
    expect(
      walk("task_run", [state("PENDING", 0), state("RUNNING", 1), state("SCHEDULED", 2, 3), state("RUNNING", 4)]).run_count
    ).toBe(2)
    expect(walk("flow_run", [state("PENDING", 0), state("SCHEDULED", 1, 9)]).run_count).toBe(0)
  })

  it("adds the time spent running, and nothing for time spent elsewhere", () => {
    const run = walk("flow_run", [state("PENDING", 0), state("RUNNING", 10), state("COMPLETED", 25)])
    expect(run.total_run_time).toBe(15)
    expect(walk("flow_run", [state("PENDING", 0), state("RUNNING", 10)]).total_run_time).toBe(0)
    const twice = walk("flow_run", [
      state("RUNNING", 0),
      state("FAILED", 2),
      state("SCHEDULED", 3, 4),
      state("RUNNING", 5),
      state("COMPLETED", 8.5)
    ])
    expect(twice.total_run_time).toBeCloseTo(5.5)
  })

  it("sets end_time on entering a terminal state, with start_time if the run never ran", () => {
    const run = walk("flow_run", [state("PENDING", 0), state("RUNNING", 1), state("COMPLETED", 2)])
    expect(run.end_time).toEqual(t(2))
    const cancelled = walk("flow_run", [state("SCHEDULED", 0, 5), state("CANCELLED", 3)])
    expect(cancelled).toMatchObject({ start_time: t(3), end_time: t(3) })
  })

  it("clears end_time when forced out of a terminal state, and keeps it from terminal to terminal", () => {
    const reopened = walk("flow_run", [state("RUNNING", 0), state("FAILED", 1), state("SCHEDULED", 2, 3)])
    expect(reopened.end_time).toBeNull()
    const refailed = walk("flow_run", [state("RUNNING", 0), state("FAILED", 1), state("CRASHED", 9)])
    expect(refailed.end_time).toEqual(t(1))
  })

  it("a resuming flow run does not count another run, and stops resuming once it runs", () => {
    const paused = walk("flow_run", [state("RUNNING", 0), state("PAUSED", 1)])
    const resumed = applyGlobalPolicy("flow_run", { ...paused, resuming: true }, state("PAUSED", 1), state("RUNNING", 5))
    expect(resumed).toMatchObject({ run_count: 1, resuming: false })
    const taskRun = applyGlobalPolicy("task_run", { ...paused, resuming: true }, state("PAUSED", 1), state("RUNNING", 5))
    expect(taskRun.run_count).toBe(2)
  })
})
