/**
 * What the SIGKILL tests drive and check, for both kinds of database: a burst of set_state calls on
 * many runs at once, the answers it got, and the invariants a killed server must leave behind.
 */
import { call, type ServerProcess } from "../support/server-process.ts"

export interface AcceptedState {
  readonly runId: string
  readonly stateId: string
  readonly type: string
}

/** The states each run goes through again and again: back to Scheduled (forced), then to Completed. */
const CYCLE = ["SCHEDULED", "PENDING", "RUNNING", "COMPLETED"] as const

const proposal = (type: (typeof CYCLE)[number]) =>
  type === "SCHEDULED"
    ? { state: { type, state_details: { scheduled_time: new Date(Date.now() - 60_000).toISOString() } }, force: true }
    : { state: { type } }

export interface Burst {
  /** Every set_state that answered ACCEPT, in the order the answers came. */
  readonly accepted: Array<AcceptedState>
  /** Answers other than ACCEPT (there should be none: the cycle follows the rules). */
  readonly other: Array<string>
  /** Stops the burst and waits for its workers (each stops at its first failed request). */
  readonly stop: () => Promise<void>
}

/**
 * One worker per run, each walking its run through the cycle with set_state as fast as answers come,
 * until stopped or until a request fails (the server is gone).
 */
export const setStateBurst = (server: ServerProcess, runIds: ReadonlyArray<string>): Burst => {
  const accepted: Array<AcceptedState> = []
  const other: Array<string> = []
  let stopped = false
  const worker = async (runId: string) => {
    for (let step = 0; !stopped; step = (step + 1) % CYCLE.length) {
      const type = CYCLE[step]!
      let answer
      try {
        answer = await call(server, "POST", `/flow_runs/${runId}/set_state`, proposal(type))
      } catch {
        return
      }
      if (answer.status === 201 || answer.status === 200) {
        if (answer.body.status === "ACCEPT") accepted.push({ runId, stateId: answer.body.state.id as string, type: answer.body.state.type as string })
        else other.push(`${type}: ${answer.body.status} ${JSON.stringify(answer.body.details)}`)
      } else {
        other.push(`${type}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`)
      }
    }
  }
  const workers = runIds.map(worker)
  return {
    accepted,
    other,
    stop: async () => {
      stopped = true
      await Promise.all(workers)
    }
  }
}

/** Resolves once `check` returns true, polling every `everyMs`; rejects after `withinMs`. */
export const until = async (check: () => boolean | Promise<boolean>, withinMs: number, everyMs = 10): Promise<void> => {
  const deadline = Date.now() + withinMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not so within ${withinMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

export interface StoredRun {
  readonly id: string
  readonly state_id: string | null
  readonly state_type: string | null
  /** The run's states, oldest first. */
  readonly states: ReadonlyArray<{ readonly id: string; readonly type: string; readonly timestamp: string }>
}

/**
 * Problems with what is stored, given the runs with their states and the accepted answers: a run
 * whose state is not its latest state row (a half-applied transition, or a state row without its run
 * update), and an accepted state that is missing or belongs elsewhere (a lost write).
 */
export const invariantViolations = (runs: ReadonlyArray<StoredRun>, accepted: ReadonlyArray<AcceptedState>): Array<string> => {
  const problems: Array<string> = []
  const byId = new Map(runs.map((run) => [run.id, run]))
  for (const run of runs) {
    const latest = run.states[run.states.length - 1]
    if (latest === undefined) {
      if (run.state_id !== null) problems.push(`run ${run.id}: state ${run.state_id} but no state rows`)
      continue
    }
    if (run.state_id !== latest.id) problems.push(`run ${run.id}: state_id ${run.state_id} is not its latest state row ${latest.id}`)
    if (run.state_type !== latest.type) problems.push(`run ${run.id}: state_type ${run.state_type} but its latest state row is ${latest.type}`)
  }
  const lastAccepted = new Map<string, AcceptedState>()
  for (const state of accepted) {
    lastAccepted.set(state.runId, state)
    const run = byId.get(state.runId)
    const stored = run?.states.find((s) => s.id === state.stateId)
    if (stored === undefined) problems.push(`accepted state ${state.stateId} (${state.type}) of run ${state.runId} is not stored`)
    else if (stored.type !== state.type) problems.push(`accepted state ${state.stateId} is stored as ${stored.type}, not ${state.type}`)
  }
  // A run's current state is its last accepted one, or one accepted after it whose answer the kill cut off.
  for (const [runId, state] of lastAccepted) {
    const run = byId.get(runId)!
    const index = run.states.findIndex((s) => s.id === state.stateId)
    if (index >= 0 && run.states.length - 1 - index > 1) {
      problems.push(`run ${runId}: ${run.states.length - 1 - index} states after its last accepted one (at most one can be unanswered)`)
    }
  }
  return problems
}
