/**
 * Flow runs on the wire without the schema machinery, for pages of up to 200 runs where decoding and
 * encoding through Effect Schema cost more than the query: the policy decoded as
 * `Schema.decodeUnknownSync(FlowRunPolicy)` does (fast when it is complete and well formed), and a
 * run as the JSON text HttpApi answers for `FlowRun` (same fields in the same order;
 * test/flow-runs/wire.test.ts holds the two side by side). A page of runs for `filter` and
 * `paginate` is written by the database (page-json.ts).
 */
import { Schema } from "effect"
import { stateWire } from "../domain/state-wire.ts"
import { type FlowRun, FlowRunPolicy, type OrchestrationResult } from "./schemas.ts"

const decodePolicySchema = Schema.decodeUnknownSync(FlowRunPolicy)

const retryTypes = new Set(["in_process", "reschedule"])

const isInt = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value)

// Rows typed and decoded by hand, not through a row schema (SqlSchema): flow run reads are on the hot path (the bench's run lifecycle).
/** FlowRunPolicy from stored JSON: the schema's answer, fast when the policy is plain. */
export const decodePolicy = (raw: unknown): FlowRunPolicy => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return decodePolicySchema(raw ?? {})
  const r = raw as Record<string, unknown>
  const max_retries = r.max_retries === undefined ? 0 : r.max_retries
  const retry_delay_seconds = r.retry_delay_seconds === undefined ? 0 : r.retry_delay_seconds
  const retries = r.retries === undefined ? null : r.retries
  const retry_delay = r.retry_delay === undefined ? null : r.retry_delay
  const pause_keys = r.pause_keys === undefined ? [] : r.pause_keys
  const resuming = r.resuming === undefined ? false : r.resuming
  const retry_type = r.retry_type === undefined ? null : r.retry_type
  if (
    isInt(max_retries) &&
    typeof retry_delay_seconds === "number" &&
    (retries === null || isInt(retries)) &&
    (retry_delay === null || isInt(retry_delay)) &&
    (pause_keys === null || (Array.isArray(pause_keys) && pause_keys.every((k) => typeof k === "string"))) &&
    (resuming === null || typeof resuming === "boolean") &&
    (retry_type === null || retryTypes.has(retry_type as string))
  ) {
    return {
      max_retries,
      retry_delay_seconds,
      retries,
      retry_delay,
      pause_keys: pause_keys === null ? null : [...(pause_keys as Array<string>)],
      resuming,
      retry_type: retry_type as FlowRunPolicy["retry_type"]
    }
  }
  return decodePolicySchema(raw)
}

const time = (date: Date | null) => (date === null ? null : date.toISOString())

/** A flow run as the schema encodes it (FlowRunResponse). */
export const flowRunWire = (run: FlowRun) => {
  const policy = run.empirical_policy
  return {
    id: run.id,
    created: time(run.created),
    updated: time(run.updated),
    name: run.name,
    flow_id: run.flow_id,
    state_id: run.state_id,
    deployment_id: run.deployment_id,
    deployment_version: run.deployment_version,
    work_queue_id: run.work_queue_id,
    work_queue_name: run.work_queue_name,
    flow_version: run.flow_version,
    parameters: run.parameters,
    idempotency_key: run.idempotency_key,
    context: run.context,
    empirical_policy: {
      max_retries: policy.max_retries,
      retry_delay_seconds: policy.retry_delay_seconds,
      retries: policy.retries,
      retry_delay: policy.retry_delay,
      pause_keys: policy.pause_keys,
      resuming: policy.resuming,
      retry_type: policy.retry_type
    },
    tags: run.tags,
    labels: run.labels,
    parent_task_run_id: run.parent_task_run_id,
    state_type: run.state_type,
    state_name: run.state_name,
    run_count: run.run_count,
    expected_start_time: time(run.expected_start_time),
    next_scheduled_start_time: time(run.next_scheduled_start_time),
    start_time: time(run.start_time),
    end_time: time(run.end_time),
    total_run_time: run.total_run_time,
    estimated_run_time: run.estimated_run_time,
    estimated_start_time_delta: run.estimated_start_time_delta,
    auto_scheduled: run.auto_scheduled,
    infrastructure_document_id: run.infrastructure_document_id,
    infrastructure_pid: run.infrastructure_pid,
    created_by: run.created_by === null
      ? null
      : { id: run.created_by.id, type: run.created_by.type, display_value: run.created_by.display_value },
    work_pool_id: run.work_pool_id,
    work_pool_name: run.work_pool_name,
    state: run.state === null ? null : stateWire(run.state),
    job_variables: run.job_variables
  }
}

/** The JSON text of one flow run, as `Schema.encode(FlowRun)` gives it. */
export const flowRunJson = (run: FlowRun) => JSON.stringify(flowRunWire(run))

/** A run as a worker's poll lists it (WorkerFlowRunResponse: the run without its pool's id and name). */
export const workerFlowRunsJson = (
  runs: ReadonlyArray<{ readonly work_pool_id: string; readonly work_queue_id: string; readonly flow_run: FlowRun }>
) =>
  JSON.stringify(runs.map(({ work_pool_id, work_queue_id, flow_run }) => {
    const { work_pool_id: _id, work_pool_name: _name, ...run } = flowRunWire(flow_run)
    return { work_pool_id, work_queue_id, flow_run: run }
  }))

/** The JSON text of an orchestration result (OrchestrationResult), as its schema encodes it. */
export const orchestrationResultJson = (result: typeof OrchestrationResult.Type) => {
  const d = result.details
  const details = d.type === "accept_details"
    ? { type: d.type }
    : d.type === "wait_details"
    ? { type: d.type, delay_seconds: d.delay_seconds, reason: d.reason }
    : { type: d.type, reason: d.reason }
  return JSON.stringify({ state: result.state === null ? null : stateWire(result.state), status: result.status, details })
}
