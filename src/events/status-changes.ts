/**
 * The seam for status events: deployments, work pools and work queues announce here, in process,
 * every status their rows changed to (READY, NOT_READY, PAUSED). The events area turns them into
 * `prefect.deployment.ready`, `prefect.work-pool.not-ready`, `prefect.work-queue.paused` …
 */
import { Effect, PubSub } from "effect"
import { afterCommit } from "../database/transactions.ts"

export interface StatusChange {
  readonly kind: "deployment" | "work-pool" | "work-queue"
  readonly id: string
  readonly status: "READY" | "NOT_READY" | "PAUSED"
  readonly at: Date
}

export class StatusChanges extends Effect.Service<StatusChanges>()("baton/StatusChanges", {
  scoped: Effect.gen(function* () {
    // Sliding: a slow subscriber loses the oldest changes rather than slowing the changes down.
    const hub = yield* Effect.acquireRelease(PubSub.sliding<StatusChange>(10_000), PubSub.shutdown)
    return {
      /** The ids of `kind` rows now in `status`, as changes at `at`. */
      announce: (kind: StatusChange["kind"], status: StatusChange["status"], at: Date, ids: ReadonlyArray<string>) =>
        // Heard once the change is committed (inside a transaction, when it commits).
        ids.length === 0 ? Effect.void : afterCommit(Effect.asVoid(PubSub.publishAll(hub, ids.map((id) => ({ kind, id, status, at }))))),
      subscribe: PubSub.subscribe(hub)
    }
  })
}) {}
