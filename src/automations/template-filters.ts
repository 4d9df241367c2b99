/**
 * The reference's template filters for automation actions: `ui_url` (the UI page of a flow run,
 * deployment, work pool … or event) and `ui_resource_events_url` (the UI's events page for a
 * resource or object). Objects are recognised by their fields; anything else gives null.
 */
import type { TemplateFilter } from "../domain/templates.ts"
import { isObject } from "../domain/schemas.ts"

const UI_PATHS: Record<string, (id: string, object: Record<string, unknown>) => string> = {
  flow: (id) => `flows/flow/${id}`,
  "flow-run": (id) => `runs/flow-run/${id}`,
  "task-run": (id) => `runs/task-run/${id}`,
  "block-document": (id) => `blocks/block/${id}`,
  "work-pool": (id, object) => `work-pools/work-pool/${typeof object.name === "string" ? object.name : id}`,
  "work-queue": (id) => `work-queues/work-queue/${id}`,
  "concurrency-limit": (id) => `concurrency-limits/concurrency-limit/${id}`,
  deployment: (id) => `deployments/deployment/${id}`,
  automation: (id) => `automations/automation/${id}`,
  "received-event": (id, object) => `events/event/${String(object.occurred ?? "").slice(0, 10)}/${id}`
}

/** The kind and id of an object of the API (by its fields), an event, or a resource (by its id label). */
export const kindOf = (value: unknown): { readonly kind: string; readonly id: string } | undefined => {
  if (!isObject(value)) return undefined
  const resourceId = value["prefect.resource.id"]
  if (typeof resourceId === "string") {
    const cut = resourceId.lastIndexOf(".")
    const prefixed = resourceId.slice(0, cut)
    return prefixed.startsWith("prefect.") ? { kind: prefixed.slice("prefect.".length), id: resourceId.slice(cut + 1) } : undefined
  }
  if (typeof value.id !== "string") return undefined
  const id = value.id
  const has = (...keys: Array<string>) => keys.every((k) => k in value)
  if (has("trigger", "actions")) return { kind: "automation", id }
  if (has("event", "occurred", "resource")) return { kind: "received-event", id }
  if (has("task_key")) return { kind: "task-run", id }
  if (has("flow_id", "entrypoint") || has("flow_id", "schedules")) return { kind: "deployment", id }
  if (has("flow_id", "run_count")) return { kind: "flow-run", id }
  if (has("base_job_template")) return { kind: "work-pool", id }
  if (has("work_pool_id", "priority")) return { kind: "work-queue", id }
  if (has("block_schema_id", "data")) return { kind: "block-document", id }
  if (has("name", "tags") && !has("flow_id")) return { kind: "flow", id }
  return undefined
}

/** The filters, for a UI served at `uiBase` (ending in "/"). */
export const templateFilters = (uiBase: string): Record<string, TemplateFilter> => ({
  ui_url: (value) => {
    const found = kindOf(value)
    const path = found && UI_PATHS[found.kind]
    return path && isObject(value) ? new URL(path(found.id, value), uiBase).toString() : null
  },
  ui_resource_events_url: (value) => {
    const found = kindOf(value)
    if (found === undefined || found.kind === "received-event") return null
    return new URL(`events?resource=${encodeURIComponent(`prefect.${found.kind}.${found.id}`)}`, uiBase).toString()
  }
})
