/**
 * The seam for status events: deployments, work pools and work queues announce here every status
 * their rows changed to (READY, NOT_READY, PAUSED). Each change is noted in the event outbox, in the
 * transaction of the change when there is one, and the relay turns the notes into
 * `prefect.deployment.ready`, `prefect.work-pool.not-ready`, `prefect.work-queue.paused` …
 */
import { Effect, PubSub } from "effect"
import { afterCommit } from "../database/transactions.ts"
import { EventOutboxRepo } from "./outbox-repo.ts"

export interface StatusChange {
  readonly kind: "deployment" | "work-pool" | "work-queue"
  readonly id: string
  readonly status: "READY" | "NOT_READY" | "PAUSED"
  readonly at: Date
}

/** A status change as the outbox keeps it (JSON). */
export interface StatusNote {
  readonly type: "status"
  readonly kind: StatusChange["kind"]
  readonly id: string
  readonly status: StatusChange["status"]
  readonly at: string
}

export const fromStatusNote = (note: StatusNote): StatusChange => ({ kind: note.kind, id: note.id, status: note.status, at: new Date(note.at) })

export class StatusChanges extends Effect.Service<StatusChanges>()("baton/StatusChanges", {
  scoped: Effect.gen(function* () {
    const outbox = yield* EventOutboxRepo
    // Sliding: a slow subscriber loses the oldest changes rather than slowing the changes down.
    const hub = yield* Effect.acquireRelease(PubSub.sliding<StatusChange>(10_000), PubSub.shutdown)
    return {
      /** The ids of `kind` rows now in `status`, as changes at `at`: noted, and heard in process once committed. */
      announce: (kind: StatusChange["kind"], status: StatusChange["status"], at: Date, ids: ReadonlyArray<string>) =>
        ids.length === 0 ? Effect.void : Effect.zipRight(
          outbox.add(ids.map((id): StatusNote => ({ type: "status", kind, id, status, at: at.toISOString() }))),
          afterCommit(Effect.asVoid(PubSub.publishAll(hub, ids.map((id) => ({ kind, id, status, at })))))
        ),
      /**
       * As announce, for changes whose outbox notes the caller's own statement wrote (`noteColumns`
       * builds them in SQL): heard in process once committed.
       */
      announceNoted: (kind: StatusChange["kind"], status: StatusChange["status"], at: Date, ids: ReadonlyArray<string>) =>
        ids.length === 0 ? Effect.void : afterCommit(Effect.asVoid(PubSub.publishAll(hub, ids.map((id) => ({ kind, id, status, at }))))),
      subscribe: PubSub.subscribe(hub)
    }
  }),
  dependencies: [EventOutboxRepo.Default]
}) {}
