/**
 * Decoding a stored state's details without the schema machinery when they are already complete and
 * well formed (as Baton writes them): the same value `Schema.decodeUnknownSync(StateDetails)` gives,
 * at a fraction of the cost, which matters when a page of 200 runs is read. Anything else (a missing
 * or unexpected field) goes through the schema.
 */
import { Schema } from "effect"
import { StateDetails } from "./states.ts"

const decodeDetails = Schema.decodeUnknownSync(StateDetails)

const uuid = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/i

/** Thrown inside the fast path to fall back to the schema. */
const FALLBACK = Symbol("fallback")

const id = (value: unknown): string | null => {
  if (value === null) return null
  if (typeof value === "string" && uuid.test(value)) return value
  throw FALLBACK
}

const text = (value: unknown): string | null => {
  if (value === null || typeof value === "string") return value
  throw FALLBACK
}

const flag = (value: unknown): boolean | null => {
  if (value === null || typeof value === "boolean") return value
  throw FALLBACK
}

const strictFlag = (value: unknown): boolean => {
  if (typeof value === "boolean") return value
  throw FALLBACK
}

const time = (value: unknown): Date | null => {
  if (value === null) return null
  if (typeof value === "string") {
    const date = new Date(value)
    if (!Number.isNaN(date.getTime())) return date
  }
  throw FALLBACK
}

const orDefault = <A>(value: unknown, fallback: A, decode: (value: unknown) => A): A =>
  value === undefined ? fallback : decode(value)

// Rows typed and decoded by hand, not through a row schema (SqlSchema): state reads are on the hot path (the bench's run lifecycle).
/** StateDetails from stored JSON: the schema's answer, fast when the details are plain. */
export const decodeStateDetails = (raw: unknown): StateDetails => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return decodeDetails(raw ?? {})
  const r = raw as Record<string, unknown>
  // A run input keyset is a record to check field by field: rare enough to leave to the schema.
  if (r.run_input_keyset !== undefined && r.run_input_keyset !== null) return decodeDetails(raw)
  try {
    return {
      flow_run_id: orDefault(r.flow_run_id, null, id),
      task_run_id: orDefault(r.task_run_id, null, id),
      child_flow_run_id: orDefault(r.child_flow_run_id, null, id),
      scheduled_time: orDefault(r.scheduled_time, null, time),
      cache_key: orDefault(r.cache_key, null, text),
      cache_expiration: orDefault(r.cache_expiration, null, time),
      deferred: orDefault(r.deferred, false, flag),
      untrackable_result: orDefault(r.untrackable_result, false, strictFlag),
      pause_timeout: orDefault(r.pause_timeout, null, time),
      pause_reschedule: orDefault(r.pause_reschedule, false, strictFlag),
      pause_key: orDefault(r.pause_key, null, text),
      run_input_keyset: null,
      refresh_cache: orDefault(r.refresh_cache, null, flag),
      retriable: orDefault(r.retriable, null, flag),
      transition_id: orDefault(r.transition_id, null, id),
      task_parameters_id: orDefault(r.task_parameters_id, null, id),
      traceparent: orDefault(r.traceparent, null, text),
      deployment_concurrency_lease_id: orDefault(r.deployment_concurrency_lease_id, null, id)
    }
  } catch (error) {
    if (error === FALLBACK) return decodeDetails(raw)
    throw error
  }
}
