/**
 * The work pools area's domain errors (pools, their queues and workers, and the legacy
 * /work_queues routes), with the reference's status and body. Where the reference words the same
 * case differently from one route to another, the class takes the words as its `detail`.
 */
import { Schema } from "effect"
import { fixedDetail, httpError, INTEGRITY_CONFLICT } from "../domain/errors.ts"

export class WorkPoolNotFound extends Schema.TaggedError<WorkPoolNotFound>()("WorkPoolNotFound", {
  detail: Schema.String
}) {}

/** The reference's words for a pool it cannot find by name, on most routes. */
export const workPoolNotFound = (name: string) => new WorkPoolNotFound({ detail: `Work pool "${name}" not found.` })

/** A queue, by id on the legacy routes or by pool and name on the pool routes. */
export class WorkQueueNotFound extends Schema.TaggedError<WorkQueueNotFound>()("WorkQueueNotFound", {
  detail: Schema.String
}) {}

/** The reference's words for a queue it cannot find in a pool. */
export const poolQueueNotFound = (poolName: string, queueName: string) =>
  new WorkQueueNotFound({ detail: `Work pool queue '${poolName}/${queueName}' not found.` })

export class WorkerNotFound extends Schema.TaggedError<WorkerNotFound>()("WorkerNotFound", {
  detail: fixedDetail("Worker not found.")
}) {}

/** A pool whose name starts with "Prefect" is the reference's own: not created, deleted, or changed beyond pause and limit. */
export class WorkPoolNameReserved extends Schema.TaggedError<WorkPoolNameReserved>()("WorkPoolNameReserved", {
  detail: Schema.String
}) {}

export class WorkPoolNameTaken extends Schema.TaggedError<WorkPoolNameTaken>()("WorkPoolNameTaken", {
  detail: fixedDetail("A work pool with this name already exists.")
}) {}

/** Another queue of the pool has the name; the pool routes name the pool in `detail`. */
export class WorkQueueNameTaken extends Schema.TaggedError<WorkQueueNameTaken>()("WorkQueueNameTaken", {
  detail: fixedDetail("A work queue with this name already exists.")
}) {}

export class DefaultQueueKept extends Schema.TaggedError<DefaultQueueKept>()("DefaultQueueKept", {
  detail: fixedDetail("Can't delete a pool's default queue.")
}) {}

/**
 * A write to a pool, its queues or workers broke a unique or foreign key constraint where the
 * reference has no words of its own: a queue renamed to a taken name, a pool deleted while a worker
 * beat or a queue was added, two requests creating the same queue or the default agent pool at once.
 */
export class WorkPoolConflict extends Schema.TaggedError<WorkPoolConflict>()("WorkPoolConflict", {
  detail: fixedDetail(INTEGRITY_CONFLICT)
}) {}

/** A job variable default points at a block document, and none can be found (blocks are not stored for pools). */
export class JobDefaultsBlockNotFound extends Schema.TaggedError<JobDefaultsBlockNotFound>()("JobDefaultsBlockNotFound", {
  detail: fixedDetail("Block not found.")
}) {}

export const WorkPoolNotFoundResponse = httpError(WorkPoolNotFound, 404, { identifier: "WorkPoolNotFound" })
export const WorkQueueNotFoundResponse = httpError(WorkQueueNotFound, 404, { identifier: "WorkQueueNotFound" })
export const WorkerNotFoundResponse = httpError(WorkerNotFound, 404, { identifier: "WorkerNotFound" })
export const WorkPoolNameReservedResponse = httpError(WorkPoolNameReserved, 403, { identifier: "WorkPoolNameReserved" })
export const WorkPoolNameTakenResponse = httpError(WorkPoolNameTaken, 409, { identifier: "WorkPoolNameTaken" })
export const WorkQueueNameTakenResponse = httpError(WorkQueueNameTaken, 409, { identifier: "WorkQueueNameTaken" })
export const DefaultQueueKeptResponse = httpError(DefaultQueueKept, 409, { identifier: "DefaultQueueKept" })
export const WorkPoolConflictResponse = httpError(WorkPoolConflict, 409, { identifier: "WorkPoolConflict" })
export const JobDefaultsBlockNotFoundResponse = httpError(JobDefaultsBlockNotFound, 404, { identifier: "JobDefaultsBlockNotFound" })
