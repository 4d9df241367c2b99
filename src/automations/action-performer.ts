/**
 * What every action kind's module shares: the signature of a performer (one per action type, the
 * actions service dispatches to it from a table), and the helpers performers use to find their
 * target and to turn an operation's errors into the reason the action failed.
 */
import { Effect } from "effect"
import { statusOf } from "../domain/errors.ts"
import type { ReceivedEvent } from "../events/schemas.ts"
import type { TriggeredAction } from "./firing.ts"
import { type ActionFailed, actionFailed } from "./outbound.ts"
import type { Action } from "./schemas.ts"

export type ActionType = Action["type"]
export type ActionOf<K extends ActionType> = Extract<Action, { readonly type: K }>

/** Performs one action; what it touched goes into `related`, what it learned into `details`. */
export type Perform<K extends ActionType> = (
  ta: TriggeredAction,
  action: ActionOf<K>,
  related: Array<Record<string, string>>,
  details: Record<string, unknown>
) => Effect.Effect<void, ActionFailed>

/**
 * The performers of some action types, by type. Spelled out rather than as Perform<P>, so that one
 * performer of several types (Perform<A | B>) is checked structurally against each.
 */
export type Performers<K extends ActionType> = {
  readonly [P in K]: (
    ta: TriggeredAction,
    action: ActionOf<P>,
    related: Array<Record<string, string>>,
    details: Record<string, unknown>
  ) => Effect.Effect<void, ActionFailed>
}

/** The first resource (own or related) of the event whose id is `<kind>.<id>`. */
export const resourceOfKind = (event: ReceivedEvent | null, kind: string) =>
  event === null ? undefined : [event.resource, ...event.related].find((r) => kindOf(r["prefect.resource.id"]!) === kind)

const kindOf = (resourceId: string) => resourceId.slice(0, Math.max(0, resourceId.lastIndexOf(".")))

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The object id of a resource id of the given kind. */
export const idOfKind = (resourceId: string | undefined, kind: string) => {
  if (resourceId === undefined || kindOf(resourceId) !== kind) return undefined
  const id = resourceId.slice(kind.length + 1)
  return UUID.test(id) ? id : undefined
}

/** The reference's reason for an answer the action did not want. */
export const statusReason = (type: string, status: number, detail?: unknown) =>
  (status === 409 || status === 422) && detail !== undefined
    ? `Validation error occurred for '${type}' - ${typeof detail === "string" ? detail : JSON.stringify(detail)}`
    : `Unexpected status from '${type}' action: ${status}`

/** The shared shapes, whose wire forms (http/errors.ts) this process may not have loaded. */
const STATUS_OF_ERROR: Record<string, number> = { NotFound: 404, Conflict: 409, ValidationError: 422, BadRequest: 400, Forbidden: 403 }

/** Runs an API-level operation; its declared errors become the reason the action failed. */
export const command = <A, R>(type: string, effect: Effect.Effect<A, unknown, R>, details: Record<string, unknown>, okStatus = 200) =>
  effect.pipe(
    Effect.tap(() => Effect.sync(() => (details.status_code = okStatus))),
    Effect.catchAll((error) => {
      // An area's own error answers with the status its wire form declares.
      const status = statusOf(error) ?? STATUS_OF_ERROR[(error as { _tag?: string })._tag ?? ""]
      if (status === undefined) return Effect.fail(actionFailed(`Action '${type}' failed: ${String(error)}`))
      details.status_code = status
      return Effect.fail(actionFailed(statusReason(type, status, (error as { detail?: unknown }).detail)))
    })
  )

/** The id a "selected" action names, or the one of that kind inferred from the triggering event. */
export const target = (ta: TriggeredAction, action: { readonly source: "selected" | "inferred" }, selectedId: string | null, kind: string, noun: string) => {
  if (action.source === "selected") return Effect.succeed(selectedId!)
  if (ta.triggering_event === null) return Effect.fail(actionFailed(`No event to infer the ${noun}`))
  const id = idOfKind(resourceOfKind(ta.triggering_event, kind)?.["prefect.resource.id"], kind)
  return id === undefined ? Effect.fail(actionFailed(`No ${noun} could be inferred`)) : Effect.succeed(id)
}

/** The flow run the firing's labels name, else the one the triggering event names. */
export const flowRunTarget = (ta: TriggeredAction) => {
  const fromLabels = idOfKind(ta.triggering_labels["prefect.resource.id"], "prefect.flow-run")
  if (fromLabels !== undefined) return Effect.succeed(fromLabels)
  const fromEvent = idOfKind(resourceOfKind(ta.triggering_event, "prefect.flow-run")?.["prefect.resource.id"], "prefect.flow-run")
  return fromEvent === undefined ? Effect.fail(actionFailed("No flow run could be inferred")) : Effect.succeed(fromEvent)
}

export const targetResource = (kind: string, id: string, name?: string | null) => ({
  "prefect.resource.id": `prefect.${kind}.${id}`,
  "prefect.resource.role": "target",
  ...(name ? { "prefect.resource.name": name } : {})
})
