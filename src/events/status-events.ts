/**
 * The server's events for status changes (their notes in the event outbox), named as the reference
 * names them: `prefect.deployment.ready` / `.not-ready`, `prefect.work-queue.ready` / `.not-ready` /
 * `.paused` and `prefect.work-pool.ready` / `.not-ready` / `.paused`, with what the object belongs
 * to as related resources.
 */
import { Effect } from "effect"
import { newId } from "../domain/ids.ts"
import type { Event, ReceivedEvent } from "./schemas.ts"
import type { StatusChange } from "./status-changes.ts"
import { type DeploymentContext, type PoolContext, type QueueContext, StatusResourcesRepo } from "./status-resources-repo.ts"

const kebab = (status: StatusChange["status"]) => status.toLowerCase().replace("_", "-")

const poolResource = (id: string, name: string, type: string | null, role?: string) => ({
  "prefect.resource.id": `prefect.work-pool.${id}`,
  "prefect.resource.name": name,
  ...(type ? { "prefect.work-pool.type": type } : {}),
  ...(role ? { "prefect.resource.role": role } : {})
})

export const deploymentRelated = (d: DeploymentContext): Array<Record<string, string>> => {
  const related: Array<Record<string, string>> = []
  if (d.flow_id && d.flow_name !== null) {
    related.push({ "prefect.resource.id": `prefect.flow.${d.flow_id}`, "prefect.resource.name": d.flow_name, "prefect.resource.role": "flow" })
  }
  if (d.work_queue_id && d.work_queue_name !== null) {
    related.push({ "prefect.resource.id": `prefect.work-queue.${d.work_queue_id}`, "prefect.resource.name": d.work_queue_name, "prefect.resource.role": "work-queue" })
  }
  if (d.work_pool_id && d.work_pool_name !== null) related.push(poolResource(d.work_pool_id, d.work_pool_name, d.work_pool_type, "work-pool"))
  if (d.storage_document_id) related.push({ "prefect.resource.id": `prefect.block-document.${d.storage_document_id}`, "prefect.resource.role": "storage" })
  if (d.infrastructure_document_id) {
    related.push({ "prefect.resource.id": `prefect.block-document.${d.infrastructure_document_id}`, "prefect.resource.role": "infrastructure" })
  }
  if (d.concurrency_limit_id) related.push({ "prefect.resource.id": `prefect.concurrency-limit.${d.concurrency_limit_id}`, "prefect.resource.role": "concurrency-limit" })
  return related
}

const statusEvent = (change: StatusChange, id: string, resource: Record<string, string>, related: Array<Record<string, string>>): Event => ({
  id,
  occurred: change.at,
  event: `prefect.${change.kind}.${kebab(change.status)}`,
  resource,
  related,
  payload: {},
  follows: null
})

/** The events of status changes, in their order (an object deleted since has none). */
export const statusEvents = (batch: ReadonlyArray<StatusChange>, received: Date) =>
  Effect.gen(function* () {
    const repo = yield* StatusResourcesRepo
    const ids = (kind: StatusChange["kind"]) => [...new Set(batch.filter((c) => c.kind === kind).map((c) => c.id))]
    const [deployments, queues, pools] = yield* Effect.all([repo.deployments(ids("deployment")), repo.queues(ids("work-queue")), repo.pools(ids("work-pool"))])
    const byId = <A extends { readonly id: string }>(rows: ReadonlyArray<A>) => new Map(rows.map((r) => [r.id, r]))
    const [deploymentOf, queueOf, poolOf] = [byId(deployments), byId(queues), byId(pools)]
    const out = new Map<StatusChange, ReceivedEvent>()
    const add = (change: StatusChange, event: Event) => out.set(change, { ...event, received })
    for (const change of batch) {
      const id = yield* newId
      if (change.kind === "deployment") {
        const d = deploymentOf.get(change.id)
        if (d) add(change, statusEvent(change, id, { "prefect.resource.id": `prefect.deployment.${d.id}`, "prefect.resource.name": d.name }, deploymentRelated(d)))
      } else if (change.kind === "work-queue") {
        const q: QueueContext | undefined = queueOf.get(change.id)
        if (q) {
          add(
            change,
            statusEvent(
              change,
              id,
              { "prefect.resource.id": `prefect.work-queue.${q.id}`, "prefect.resource.name": q.name, "prefect.resource.role": "work-queue" },
              q.work_pool_id && q.work_pool_name !== null ? [poolResource(q.work_pool_id, q.work_pool_name, q.work_pool_type, "work-pool")] : []
            )
          )
        }
      } else {
        const p: PoolContext | undefined = poolOf.get(change.id)
        if (p) add(change, statusEvent(change, id, poolResource(p.id, p.name, p.type), []))
      }
    }
    return out
  })
