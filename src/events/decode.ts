/**
 * Events decoded without Schema when they have the plain shape clients send: the /events/in
 * websocket decodes every message, and Schema's decoder costs several times the parse. Anything
 * else (a missing or mistyped field, a date out of range, an unusual key) is left to `Event`'s
 * Schema, which says what is wrong the way the reference does. What is taken here decodes through
 * Schema to an equal value (test/events/decode.test.ts checks this on generated input).
 */
import { EARLIEST, LATEST } from "../domain/time.ts"
import type { Event } from "./schemas.ts"

/** Schema.UUID's pattern. */
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/i
const EARLIEST_MS = EARLIEST.getTime()
const LATEST_MS = LATEST.getTime()

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Labels of strings with a non-empty `prefect.resource.id` (and `prefect.resource.role`, for a
 * related resource). A `__proto__` key is left to Schema: it is a label of the parsed object but
 * not of the one Schema builds.
 */
const isLabels = (value: unknown, related: boolean): value is Record<string, string> => {
  if (!isObject(value)) return false
  for (const key in value) {
    if (typeof value[key] !== "string" || key === "__proto__") return false
  }
  const id = value["prefect.resource.id"]
  if (id === undefined || id === "") return false
  if (!related) return true
  const role = value["prefect.resource.role"]
  return role !== undefined && role !== ""
}

const isRelated = (value: unknown): value is ReadonlyArray<Record<string, string>> => {
  if (!Array.isArray(value)) return false
  for (const resource of value) if (!isLabels(resource, true)) return false
  return true
}

/**
 * The event a parsed JSON value is, when it has the plain shape; undefined when Schema must decide.
 * The value's own objects are kept (it is fresh from JSON.parse, and Schema would copy them as
 * they are).
 */
export const decodePlainEvent = (input: unknown): Event | undefined => {
  if (!isObject(input)) return undefined
  const { event, follows, id, occurred, payload, related, resource } = input
  if (typeof event !== "string" || typeof id !== "string" || typeof occurred !== "string" || !UUID.test(id)) return undefined
  const at = new Date(occurred)
  const time = at.getTime()
  // NaN (not a date) fails both.
  if (!(time >= EARLIEST_MS && time <= LATEST_MS)) return undefined
  if (!isLabels(resource, false)) return undefined
  if (related !== undefined && !isRelated(related)) return undefined
  if (payload !== undefined && !(isObject(payload) && !Object.hasOwn(payload, "__proto__"))) return undefined
  if (follows !== undefined && follows !== null && !(typeof follows === "string" && UUID.test(follows))) return undefined
  return {
    occurred: at,
    event,
    resource,
    related: related ?? [],
    payload: payload ?? {},
    id,
    follows: follows ?? null
  }
}
