/**
 * Transactions whose consequences wait for the commit. What a transaction announces to the rest of
 * the process (a state transition to the event emitters and to held worker polls) must not be seen
 * before the rows it names can be read: `afterCommit` queues it until the outermost transaction of
 * the fiber commits, and drops it when that transaction rolls back. Outside a transaction it runs
 * at once.
 */
import { SqlClient } from "@effect/sql"
import { Effect, FiberRef, Option } from "effect"

/** What waits for the outermost transaction of this fiber (undefined outside one). */
const pending = FiberRef.unsafeMake<Array<Effect.Effect<void>> | undefined>(undefined)

/** Runs `effect` once the current transaction commits (at once outside a transaction). */
export const afterCommit = (effect: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    const queue = fiber.getFiberRef(pending)
    if (queue === undefined) return effect
    queue.push(effect)
    return Effect.void
  })

/**
 * `sql.withTransaction(effect)`, keeping what `afterCommit` queues in it until the outermost
 * transaction commits; a nested one (a savepoint) leaves them to the outermost.
 */
export const transaction = <A, E, R>(sql: SqlClient.SqlClient, effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(FiberRef.get(pending), (outer) => {
    if (outer !== undefined) return sql.withTransaction(effect)
    const queue: Array<Effect.Effect<void>> = []
    return sql.withTransaction(effect).pipe(
      Effect.locally(pending, queue),
      Effect.tap(() => Effect.forEach(queue, (queued) => queued, { discard: true }))
    )
  })

/** Whether the fiber is inside a transaction (its statements go to the transaction's connection). */
export const inOpenTransaction: Effect.Effect<boolean> = Effect.map(Effect.serviceOption(SqlClient.TransactionConnection), Option.isSome)
