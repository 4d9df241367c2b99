/** Work queues in SQL: records, priorities kept unique within a pool, readiness. */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { StatusChanges } from "../events/status-changes.ts"
import { Effect, Option, Schema } from "effect"
import { isForeignKeyViolation, isIntegrityViolation, isUniqueViolation, sqlErrorsAsDefects } from "../database/errors.ts"
import { transaction } from "../database/transactions.ts"
import { AsGiven, IdRow, type Page } from "../database/rows.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { WorkPoolConflict, WorkQueueNameTaken } from "./errors.ts"
import { WorkQueueFilter } from "./filter.ts"
import { QueueFilter, WorkQueue, WorkQueueStatus } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

/** A row of `work_queue` with its pool's name (what the rules read). */
export const WorkQueueRow = Schema.Struct({
  id: Schema.String,
  created: Schema.DateFromSelf,
  updated: Schema.DateFromSelf,
  name: Schema.String,
  /** The legacy filter of queues made before work pools: the JSON its body schema reads. */
  filter: Schema.NullOr(QueueFilter),
  description: Schema.String,
  is_paused: Schema.Boolean,
  concurrency_limit: Schema.NullOr(Schema.Number),
  priority: Schema.Number,
  last_polled: Schema.NullOr(Schema.DateFromSelf),
  status: WorkQueueStatus,
  work_pool_id: Schema.String,
  work_pool_name: Schema.String
})
export type WorkQueueRow = typeof WorkQueueRow.Type

/** A queue's record as answered, built in SQL as JSON (its timestamps ISO strings): the wire's schema decodes it. */
const RecordRow = Schema.Struct({ record: WorkQueue })

const PriorityRow = Schema.Struct({ id: Schema.String, priority: Schema.Number })

const UpdatedRow = Schema.Struct({ id: Schema.String, previous: Schema.NullOr(Schema.String) })

/**
 * Sets `columns` of the row `id` of a pool or queue table; its id and the status it had before
 * (what a status change is announced from), none when there is no such row.
 */
export const updateWithPreviousStatus = (sql: SqlClient.SqlClient, table: "work_pool" | "work_queue") =>
  SqlSchema.findOne({
    Request: AsGiven<{ readonly id: string; readonly columns: Readonly<Record<string, unknown>> }>(),
    Result: UpdatedRow,
    execute: ({ columns, id }) =>
      sql`
        WITH before AS (SELECT id, status FROM ${sql(table)} WHERE id = ${id})
        UPDATE ${sql(table)} SET ${sql.update(columns)} FROM before WHERE ${sql(table)}.id = before.id
        RETURNING ${sql(table)}.id, before.status AS previous
      `
  })

export interface NewWorkQueue {
  readonly name: string
  readonly description?: string | null
  readonly is_paused?: boolean
  readonly concurrency_limit?: number | null
  /** Omitted: the first free priority. Given: taken, and the pool's other queues make room. */
  readonly priority?: number | null
  readonly filter?: unknown
}

/**
 * Which runs hold a queue's slots: the pool routes count Pending and Running runs, the legacy
 * /work_queues routes Cancelling ones too (as the reference does).
 */
export type SlotStates = "pool" | "legacy"

const slotStates = { pool: ["PENDING", "RUNNING"], legacy: ["PENDING", "RUNNING", "CANCELLING"] } as const

/**
 * New priorities so that every queue of a pool has its own: the `moved` queues take their targets
 * and the others, in priority order, step down one where they collide (gaps are kept).
 */
export const rebalance = (
  queues: ReadonlyArray<{ readonly id: string; readonly priority: number }>,
  moved: ReadonlyMap<string, number>
): Map<string, number> => {
  const others = queues.filter((q) => !moved.has(q.id)).map((q) => ({ ...q }))
  const targets = [...moved.entries()].filter(([id]) => queues.some((q) => q.id === id)).sort((a, b) => a[1] - b[1])
  for (const [id, priority] of targets) {
    const at = others.findIndex((q) => q.priority >= priority)
    // Past every other queue: it keeps its target and collides with nothing.
    if (at !== -1) others.splice(at, 0, { id, priority })
  }
  const result = new Map<string, number>(targets)
  let last = 0
  for (const q of others) {
    last = q.priority <= last ? last + 1 : q.priority
    result.set(q.id, last)
  }
  return result
}

export class WorkQueuesRepo extends Effect.Service<WorkQueuesRepo>()("baton/WorkQueuesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const statusChanges = yield* StatusChanges

    const selectRows = sql`
      SELECT work_queue.*, work_pool.name AS work_pool_name
      FROM work_queue JOIN work_pool ON work_pool.id = work_queue.work_pool_id
    `

    const selectOne = SqlSchema.findOne({
      Request: AsGiven<Statement.Fragment>(),
      Result: WorkQueueRow,
      execute: (condition) => sql`${selectRows} WHERE ${condition}`
    })

    const find = (id: string) => selectOne(sql`work_queue.id = ${id}`)

    const findByName = (poolName: string, queueName: string) =>
      selectOne(sql`work_pool.name = ${poolName} AND work_queue.name = ${queueName}`)

    /** The first queue named `name`, in any pool. */
    const findAnyByName = (name: string) => selectOne(sql`work_queue.name = ${name} ORDER BY work_queue.id LIMIT 1`)

    /** The default queue of the pool named `poolName`; none when there is no such pool. */
    const findDefault = (poolName: string) =>
      selectOne(sql`work_pool.name = ${poolName} AND work_queue.id = work_pool.default_queue_id`)

    /** Queue records as answered, with the runs holding their slots counted when they have a limit. */
    const recordRows = SqlSchema.findAll({
      Request: AsGiven<{ readonly condition: Statement.Fragment; readonly slots: SlotStates; readonly tail?: Statement.Fragment }>(),
      Result: RecordRow,
      execute: (options) =>
        sql`
          SELECT to_jsonb(work_queue.*) || jsonb_build_object(
            'work_pool_name', work_pool.name,
            'active_slots', CASE WHEN work_queue.concurrency_limit IS NULL THEN NULL ELSE (
              SELECT count(*) FROM flow_run
              WHERE flow_run.work_queue_id = work_queue.id AND flow_run.state_type = ANY(${slotStates[options.slots]}::text[])
            ) END
          ) AS record
          FROM work_queue JOIN work_pool ON work_pool.id = work_queue.work_pool_id
          WHERE ${options.condition}
          ${options.tail ?? sql``}
        `
    })
    const records = (condition: Statement.Fragment, options: { readonly slots: SlotStates; readonly tail?: Statement.Fragment }) =>
      Effect.map(recordRows({ ...options, condition }), (rows) => rows.map((row) => row.record))

    const findRecord = (id: string, slots: SlotStates) =>
      Effect.map(records(sql`work_queue.id = ${id}`, { slots }), (rows) => Option.fromNullable(rows[0]))

    /** Queues matching the filter (in one pool when given), by priority in a pool, by name across pools. */
    const filter = (options: { readonly poolId?: string; readonly filter: WorkQueueFilter | null | undefined; readonly slots: SlotStates } & Page) =>
      records(
        sql.and([
          options.poolId === undefined ? sql`TRUE` : sql`work_queue.work_pool_id = ${options.poolId}`,
          WorkQueueFilter.compile(sql, options.filter)
        ]),
        {
          slots: options.slots,
          tail: options.poolId === undefined
            ? sql`ORDER BY work_queue.name, work_queue.id LIMIT ${options.limit} OFFSET ${options.offset}`
            : sql`ORDER BY work_queue.priority, work_queue.name LIMIT ${options.limit} OFFSET ${options.offset}`
        }
      )

    const lockPriorities = SqlSchema.findAll({
      Request: Schema.String,
      Result: PriorityRow,
      execute: (poolId) => sql`SELECT id, priority FROM work_queue WHERE work_pool_id = ${poolId} ORDER BY priority, id FOR UPDATE`
    })

    const takenPriorities = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ priority: Schema.Number }),
      execute: (poolId) => sql`SELECT priority FROM work_queue WHERE work_pool_id = ${poolId} ORDER BY priority`
    })

    const insertRow = SqlSchema.single({
      Request: AsGiven<Omit<NewWorkQueue, "priority"> & { readonly id: string; readonly at: Date; readonly poolId: string; readonly priority: number }>(),
      Result: WorkQueueRow,
      execute: (queue) =>
        sql`
          WITH inserted AS (
            INSERT INTO work_queue (id, created, updated, name, description, is_paused, concurrency_limit, priority, filter,
                                    work_pool_id, status)
            VALUES (${queue.id}, ${queue.at}, ${queue.at}, ${queue.name}, ${queue.description ?? ""}, ${queue.is_paused ?? false},
                    ${queue.concurrency_limit ?? null}, ${queue.priority},
                    ${queue.filter == null ? null : JSON.stringify(queue.filter)}::jsonb, ${queue.poolId}, 'NOT_READY')
            RETURNING *
          )
          SELECT inserted.*, work_pool.name AS work_pool_name FROM inserted JOIN work_pool ON work_pool.id = inserted.work_pool_id
        `
    })

    const updateRow = updateWithPreviousStatus(sql, "work_queue")

    /** Gives the `moved` queues their priorities and moves the pool's others out of their way. */
    const rebalancePriorities = traced("WorkQueuesRepo.rebalancePriorities")(function* (
      poolId: string,
      moved: ReadonlyMap<string, number>
    ) {
      const queues = yield* lockPriorities(poolId)
      const next = rebalance(queues, moved)
      const changed = queues.filter((q) => next.has(q.id) && next.get(q.id) !== q.priority)
      if (changed.length === 0) return
      const at = yield* now
      yield* sql`
        UPDATE work_queue SET priority = v.priority, updated = ${at}
        FROM jsonb_to_recordset(${JSON.stringify(changed.map((q) => ({ id: q.id, priority: next.get(q.id) })))}::jsonb)
          AS v(id uuid, priority integer)
        WHERE work_queue.id = v.id
      `
    })

    /** Adds a queue to a pool; priorities stay unique within the pool. Call inside a transaction. */
    const insertQueue = traced("WorkQueuesRepo.createQueue")(function* (poolId: string, queue: NewWorkQueue) {
      const id = yield* newId
      const at = yield* now
      let priority = queue.priority ?? null
      if (priority === null) {
        const taken = yield* takenPriorities(poolId)
        // The first gap in 1, 2, 3 … or one past the last.
        priority = taken.findIndex((row, i) => row.priority !== i + 1) + 1 || taken.length + 1
      }
      const row = yield* insertRow({ ...queue, id, at, poolId, priority })
      // The new queue keeps the priority it was given: only the others move.
      if (queue.priority != null) yield* rebalancePriorities(poolId, new Map([[id, queue.priority]]))
      return row
    })

    /**
     * WorkQueueNameTaken when the pool has a queue of that name, WorkPoolConflict when the pool is
     * gone (deleted since the caller found it).
     */
    const createQueue = (poolId: string, queue: NewWorkQueue) =>
      insertQueue(poolId, queue).pipe(
        Effect.catchIf(isUniqueViolation, () => new WorkQueueNameTaken()),
        Effect.catchIf(isForeignKeyViolation, () => new WorkPoolConflict())
      )

    /** Sets the given columns (and `updated`); false when there is no such queue. */
    const updateColumns = traced("WorkQueuesRepo.update")(function* (id: string, changes: Readonly<Record<string, unknown>>) {
      const at = yield* now
      const status = changes.status as "READY" | "NOT_READY" | "PAUSED" | undefined
      // The change and its status event's note commit together.
      return yield* transaction(sql, Effect.gen(function* () {
        const updated = yield* updateRow({ id, columns: { ...changes, updated: at } })
        if (status !== undefined && Option.isSome(updated) && updated.value.previous !== status) {
          yield* statusChanges.announce("work-queue", status, at, [id])
        }
        return Option.isSome(updated)
      }))
    })

    /** A new name another queue of the pool has is the reference's integrity conflict. */
    const update = (id: string, changes: Readonly<Record<string, unknown>>) =>
      Effect.catchIf(updateColumns(id, changes), isIntegrityViolation, () => new WorkPoolConflict())

    const idRowsInPool = SqlSchema.findAll({
      Request: Schema.String,
      Result: IdRow,
      execute: (poolId) => sql`SELECT id FROM work_queue WHERE work_pool_id = ${poolId}`
    })
    const idsInPool = (poolId: string) => Effect.map(idRowsInPool(poolId), (rows) => rows.map((r) => r.id))

    const remove = (id: string) =>
      Effect.map(sql`DELETE FROM work_queue WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    /** READY queues not polled since `before` become NOT_READY. */
    const staleQueues = SqlSchema.findAll({
      Request: AsGiven<{ readonly before: Date; readonly at: Date }>(),
      Result: IdRow,
      execute: ({ at, before }) =>
        sql`UPDATE work_queue SET status = 'NOT_READY', updated = ${at} WHERE status = 'READY' AND last_polled < ${before} RETURNING id`
    })
    const markStale = (before: Date, at: Date) =>
      transaction(sql, Effect.flatMap(staleQueues({ before, at }), (rows) => statusChanges.announce("work-queue", "NOT_READY", at, rows.map((r) => r.id))))

    /**
     * Queues whose (legacy) filter takes the deployment: no filter, or its tags all among the
     * deployment's and its deployment ids naming it (an empty or missing criterion takes any).
     */
    const queuesAccepting = SqlSchema.findAll({
      Request: AsGiven<{ readonly id: string; readonly tags: ReadonlyArray<string> }>(),
      Result: WorkQueueRow,
      execute: (deployment) =>
        sql`
          ${selectRows}
          WHERE work_queue.filter IS NULL OR work_queue.filter = 'null'::jsonb OR (
            (jsonb_typeof(work_queue.filter -> 'tags') IS DISTINCT FROM 'array'
              OR ${JSON.stringify(deployment.tags)}::jsonb @> (work_queue.filter -> 'tags'))
            AND (jsonb_typeof(work_queue.filter -> 'deployment_ids') IS DISTINCT FROM 'array'
              OR work_queue.filter -> 'deployment_ids' = '[]'::jsonb
              OR (work_queue.filter -> 'deployment_ids') ? ${deployment.id}))
          ORDER BY work_pool.name, work_queue.priority, work_queue.name
        `
    })

    return sqlErrorsAsDefects({
      find,
      findByName,
      findAnyByName,
      findDefault,
      findRecord,
      filter,
      createQueue,
      rebalancePriorities,
      update,
      idsInPool,
      remove,
      markStale,
      queuesAccepting
    })
  }),
  dependencies: [StatusChanges.Default]
}) {}
