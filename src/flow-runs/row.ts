/** A flow_run row as the repository reads it, and the flow run record answered for it. */
import type { DeploymentConcurrency } from "../concurrency/rules.ts"
import type { StateType } from "../domain/states.ts"
import { estimates } from "../orchestration/global-policy.ts"
import { type StateRow, toState } from "../orchestration/repo.ts"
import type { FlowRun } from "./schemas.ts"
import { decodePolicy } from "./wire.ts"

// Rows typed and decoded by hand, not through a row schema (SqlSchema): flow run reads are on the hot path (the bench's run lifecycle).
/** A flow_run row with its current state (as JSON) alongside. */
export interface FlowRunRow {
  readonly id: string
  readonly created: Date
  readonly updated: Date
  readonly name: string
  readonly flow_id: string
  readonly state_id: string | null
  readonly state_type: StateType | null
  readonly state_name: string | null
  readonly state_timestamp: Date | null
  readonly deployment_id: string | null
  readonly deployment_version: string | null
  readonly work_queue_id: string | null
  readonly work_queue_name: string | null
  readonly flow_version: string | null
  readonly parameters: Record<string, unknown>
  readonly idempotency_key: string | null
  readonly context: Record<string, unknown>
  readonly empirical_policy: unknown
  readonly tags: ReadonlyArray<string>
  readonly labels: FlowRun["labels"]
  readonly parent_task_run_id: string | null
  readonly run_count: number
  readonly expected_start_time: Date | null
  readonly next_scheduled_start_time: Date | null
  readonly start_time: Date | null
  readonly end_time: Date | null
  readonly total_run_time: number
  readonly auto_scheduled: boolean
  readonly infrastructure_document_id: string | null
  readonly infrastructure_pid: string | null
  readonly created_by: FlowRun["created_by"]
  readonly job_variables: Record<string, unknown> | null
  readonly state: StateRow | null
  readonly queue_name: string | null
  readonly work_pool_id: string | null
  readonly work_pool_name: string | null
  readonly last_state_timestamp?: Date | string | null
  readonly deployment_concurrency?: DeploymentConcurrency | null
}

/** The record answered for a row, with run time and lateness estimated at `at`. */
export const toFlowRun = (row: FlowRunRow, at: Date): FlowRun => {
  const { state, state_timestamp: _, queue_name, ...columns } = row
  return {
    ...columns,
    // A run in a work queue shows the queue's current name.
    work_queue_name: queue_name ?? row.work_queue_name,
    empirical_policy: decodePolicy(row.empirical_policy ?? {}),
    ...estimates(row, at),
    state: state === null ? null : toState(state)
  }
}
