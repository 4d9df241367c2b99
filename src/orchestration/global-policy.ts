/**
 * The global bookkeeping every accepted transition applies to its run, whatever the core policy
 * decided (and also for forced transitions): state type and name, start and end times, run count,
 * time spent running, expected and next scheduled start times, the resuming indicator; and the
 * runs each stored state names in its details.
 */
import { isFinal, type StateType } from "../domain/states.ts"

/** The part of a run the bookkeeping reads and writes. */
export interface RunClock {
  readonly state_type: StateType | null
  readonly state_name: string | null
  readonly state_timestamp: Date | null
  readonly start_time: Date | null
  readonly end_time: Date | null
  readonly run_count: number
  /** Seconds spent in RUNNING states. */
  readonly total_run_time: number
  readonly expected_start_time: Date | null
  readonly next_scheduled_start_time: Date | null
  /** Flow runs only: set while a paused run resumes. */
  readonly resuming?: boolean | null
}

export interface TransitionState {
  readonly type: StateType
  readonly name: string | null
  readonly timestamp: Date
  readonly scheduled_time: Date | null
}

/**
 * The run after moving from `initial` to `proposed`. Flow runs keep their run count while they
 * resume from a pause (the reference's IncrementFlowRunCount); task runs always count.
 */
export const applyGlobalPolicy = (
  kind: "flow_run" | "task_run",
  run: RunClock,
  initial: TransitionState | null,
  proposed: TransitionState
): RunClock => {
  const running = proposed.type === "RUNNING"
  const final = isFinal(proposed.type)

  let start_time = run.start_time
  if (running && start_time === null) start_time = proposed.timestamp

  let end_time = run.end_time
  // Forced out of a terminal state: the run has not ended after all.
  if (initial !== null && isFinal(initial.type) && !final) end_time = null
  if (final && end_time === null) {
    if (start_time === null) start_time = proposed.timestamp
    end_time = proposed.timestamp
  }

  const total_run_time = initial !== null && initial.type === "RUNNING"
    ? run.total_run_time + (proposed.timestamp.getTime() - initial.timestamp.getTime()) / 1000
    : run.total_run_time

  const expected_start_time = run.expected_start_time ??
    (proposed.type === "SCHEDULED" ? proposed.scheduled_time : proposed.timestamp)

  let next_scheduled_start_time = run.next_scheduled_start_time
  if (initial !== null && initial.type === "SCHEDULED") next_scheduled_start_time = null
  if (proposed.type === "SCHEDULED") next_scheduled_start_time = proposed.scheduled_time

  const resumingNow = kind === "flow_run" && run.resuming === true
  const run_count = running && !resumingNow ? run.run_count + 1 : run.run_count
  const resuming = kind === "flow_run" && (running || final) ? false : run.resuming

  return {
    ...run,
    state_type: proposed.type,
    state_name: proposed.name,
    state_timestamp: proposed.timestamp,
    start_time,
    end_time,
    run_count,
    total_run_time,
    expected_start_time,
    next_scheduled_start_time,
    ...(resuming !== undefined ? { resuming } : {})
  }
}

/** What a run's states name of it: a task run's flow run, a flow run's parent task run. */
export interface RunLinks {
  readonly id: string
  /** Task runs: the flow run they belong to (null for none). */
  readonly flow_run_id?: string | null
  /** Flow runs: the task run that started them as a subflow (null for none). */
  readonly parent_task_run_id?: string | null
}

/**
 * The runs a state of `run` belongs to, set whatever the client sent (the reference's
 * UpdateStateDetails and UpdateSubflowStateDetails): a task run's states name the task run and its
 * flow run; a flow run's states name the flow run and, for a subflow, the task run that started it
 * (otherwise they keep the task run id the client gave).
 */
export const stateLinks = (kind: "flow_run" | "task_run", run: RunLinks) =>
  kind === "task_run"
    ? { flow_run_id: run.flow_run_id ?? null, task_run_id: run.id }
    : {
      flow_run_id: run.id,
      ...(run.parent_task_run_id !== null && run.parent_task_run_id !== undefined ? { task_run_id: run.parent_task_run_id } : {})
    }

/**
 * The estimates a run is answered with, at `at`: run time including the current Running stretch,
 * and lateness (start minus expected start; for a run not started and not ended, now minus expected).
 */
export const estimates = (
  run: Pick<RunClock, "state_type" | "state_timestamp" | "total_run_time" | "start_time" | "expected_start_time">,
  at: Date
) => {
  const seconds = (ms: number) => ms / 1000
  const runningFor = run.state_type === "RUNNING" && run.state_timestamp !== null
    ? Math.max(0, seconds(at.getTime() - run.state_timestamp.getTime()))
    : 0
  let lateness = 0
  if (run.start_time !== null && run.expected_start_time !== null && run.start_time > run.expected_start_time) {
    lateness = seconds(run.start_time.getTime() - run.expected_start_time.getTime())
  } else if (
    run.start_time === null && run.expected_start_time !== null && run.expected_start_time < at && !isFinal(run.state_type)
  ) {
    lateness = seconds(at.getTime() - run.expected_start_time.getTime())
  }
  return { estimated_run_time: run.total_run_time + runningFor, estimated_start_time_delta: lateness }
}
