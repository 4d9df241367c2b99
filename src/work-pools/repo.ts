/** Work pools and their workers in SQL. */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { StatusChanges } from "../events/status-changes.ts"
import { Effect, Option, Schema } from "effect"
import { isForeignKeyViolation, isUniqueViolation, sqlErrorsAsDefects } from "../database/errors.ts"
import { transaction } from "../database/transactions.ts"
import { AsGiven, IdRow, type Page, countWhere, findRowBy } from "../database/rows.ts"
import { newId } from "../domain/ids.ts"
import { JsonObject } from "../domain/schemas.ts"
import { now } from "../domain/time.ts"
import { WorkPoolConflict, WorkPoolNameTaken } from "./errors.ts"
import { WorkerFilter, WorkPoolFilter } from "./filter.ts"
import { updateWithPreviousStatus, type WorkQueueRow, WorkQueuesRepo } from "./queues-repo.ts"
import { Worker, WorkPool, WorkPoolStatus } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

/**
 * A row of `work_pool`. Not the wire's record, which shows no status for the agent pool, fills the
 * storage configuration in and counts the active slots (`records` builds it in SQL).
 */
export const WorkPoolRow = Schema.Struct({
  id: Schema.String,
  created: Schema.DateFromSelf,
  updated: Schema.DateFromSelf,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  type: Schema.String,
  base_job_template: JsonObject,
  is_paused: Schema.Boolean,
  default_queue_id: Schema.NullOr(Schema.String),
  concurrency_limit: Schema.NullOr(Schema.Number),
  status: WorkPoolStatus,
  last_transitioned_status_at: Schema.NullOr(Schema.DateFromSelf),
  last_status_event_id: Schema.NullOr(Schema.String),
  storage_configuration: JsonObject
})
export type WorkPoolRow = typeof WorkPoolRow.Type

/** A pool's record as answered, built in SQL as JSON (its timestamps ISO strings): the wire's schema decodes it. */
const RecordRow = Schema.Struct({ record: WorkPool })

/** A row of `worker`: its wire record, decoded (its timestamps Dates). */
export const WorkerRow = Schema.typeSchema(Worker)
export type WorkerRow = typeof WorkerRow.Type


export interface NewWorkPool {
  readonly name: string
  readonly type: string
  readonly description?: string | null
  readonly base_job_template?: Record<string, unknown>
  readonly is_paused?: boolean
  readonly concurrency_limit?: number | null
  readonly storage_configuration?: Record<string, unknown> | undefined
}

/** The pool type of the default agent pool; its status is not shown. */
export const AGENT_POOL_TYPE = "prefect-agent"

const emptyStorage = { bundle_upload_step: null, bundle_execution_step: null, default_result_storage_block_id: null }

export class WorkPoolsRepo extends Effect.Service<WorkPoolsRepo>()("baton/WorkPoolsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const queues = yield* WorkQueuesRepo
    const statusChanges = yield* StatusChanges

    const findByName = findRowBy(sql, "work_pool", "name", WorkPoolRow)

    const findById = findRowBy(sql, "work_pool", "id", WorkPoolRow)

    /** Pool records as answered: Pending and Running runs in their queues counted when they have a limit. */
    const records = SqlSchema.findAll({
      Request: AsGiven<{ readonly condition: Statement.Fragment; readonly tail?: Statement.Fragment }>(),
      Result: RecordRow,
      execute: ({ condition, tail }) =>
        sql`
          SELECT to_jsonb(work_pool.*) || jsonb_build_object(
            'status', CASE WHEN work_pool.type = ${AGENT_POOL_TYPE} THEN NULL ELSE work_pool.status END,
            'storage_configuration', ${JSON.stringify(emptyStorage)}::jsonb || work_pool.storage_configuration,
            'active_slots', CASE WHEN work_pool.concurrency_limit IS NULL THEN NULL ELSE (
              SELECT count(*) FROM flow_run JOIN work_queue ON work_queue.id = flow_run.work_queue_id
              WHERE work_queue.work_pool_id = work_pool.id AND flow_run.state_type IN ('PENDING', 'RUNNING')
            ) END
          ) AS record
          FROM work_pool
          WHERE ${condition}
          ${tail ?? sql``}
        `
    })

    const findRecord = (name: string) =>
      Effect.map(records({ condition: sql`work_pool.name = ${name}` }), (rows) => Option.fromNullable(rows[0]?.record))

    const filter = (options: { readonly filter: WorkPoolFilter | null | undefined } & Page) =>
      Effect.map(
        records({
          condition: WorkPoolFilter.compile(sql, options.filter),
          tail: sql`ORDER BY work_pool.name LIMIT ${options.limit} OFFSET ${options.offset}`
        }),
        (rows) => rows.map((row) => row.record)
      )

    const counted = countWhere(sql, "work_pool")
    const count = (poolFilter: WorkPoolFilter | null | undefined) => counted(WorkPoolFilter.compile(sql, poolFilter))

    const setDefaultQueue = SqlSchema.single({
      Request: AsGiven<{ readonly id: string; readonly queueId: string }>(),
      Result: WorkPoolRow,
      execute: ({ id, queueId }) => sql`UPDATE work_pool SET default_queue_id = ${queueId} WHERE id = ${id} RETURNING *`
    })

    const updateRow = updateWithPreviousStatus(sql, "work_pool")

    /**
     * Creates a pool with its `default` queue; answers both. WorkPoolNameTaken when another pool has
     * the name. Call inside a transaction.
     */
    const createPool = traced("WorkPoolsRepo.createPool")(function* (pool: NewWorkPool) {
      const id = yield* newId
      const at = yield* now
      yield* sql`
        INSERT INTO work_pool (id, created, updated, name, description, type, base_job_template, is_paused,
                               concurrency_limit, status, storage_configuration, last_transitioned_status_at)
        VALUES (${id}, ${at}, ${at}, ${pool.name}, ${pool.description ?? null}, ${pool.type},
                ${JSON.stringify(pool.base_job_template ?? {})}::jsonb, ${pool.is_paused ?? false},
                ${pool.concurrency_limit ?? null}, ${pool.is_paused && pool.type !== AGENT_POOL_TYPE ? "PAUSED" : "NOT_READY"},
                ${JSON.stringify({ ...emptyStorage, ...pool.storage_configuration })}::jsonb, ${at})
      `.pipe(Effect.catchIf(isUniqueViolation, () => new WorkPoolNameTaken()))
      // The pool was inserted just now, in this transaction: its default queue's name is free.
      const defaultQueue: WorkQueueRow = yield* queues.createQueue(id, { name: "default", description: "The work pool's default queue." })
        .pipe(Effect.catchTags({ WorkQueueNameTaken: Effect.die, WorkPoolConflict: Effect.die }))
      return { pool: yield* setDefaultQueue({ id, queueId: defaultQueue.id }), defaultQueue }
    })

    /** Sets the given columns (and `updated`); false when there is no such pool. */
    const update = traced("WorkPoolsRepo.update")(function* (id: string, changes: Readonly<Record<string, unknown>>) {
      const at = yield* now
      const status = changes.status as "READY" | "NOT_READY" | "PAUSED" | undefined
      const transitioned = status === undefined ? {} : { last_transitioned_status_at: at }
      // The change and its status event's note commit together.
      return yield* transaction(sql, Effect.gen(function* () {
        const updated = yield* updateRow({ id, columns: { ...changes, ...transitioned, updated: at } })
        if (status !== undefined && Option.isSome(updated) && updated.value.previous !== status) {
          yield* statusChanges.announce("work-pool", status, at, [id])
        }
        return Option.isSome(updated)
      }))
    })

    /** Deletes the pool with its queues (the default one included) and workers. */
    const remove = (id: string) =>
      sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`UPDATE work_pool SET default_queue_id = NULL WHERE id = ${id}`
          const rows = yield* sql`DELETE FROM work_pool WHERE id = ${id} RETURNING id`
          return rows.length > 0
        })
      )

    /** Whether any worker of the pool is ONLINE. */
    const hasOnlineWorker = (poolId: string) =>
      Effect.map(
        sql`SELECT 1 FROM worker WHERE work_pool_id = ${poolId} AND status = 'ONLINE' LIMIT 1`,
        (rows) => rows.length > 0
      )

    /** A worker's heartbeat: the worker (created on its first) is ONLINE as of now. */
    const beat = traced("WorkPoolsRepo.heartbeat")(function* (
      poolId: string,
      worker: { readonly name: string; readonly heartbeat_interval_seconds?: number | null | undefined }
    ) {
      const at = yield* now
      const interval = worker.heartbeat_interval_seconds ?? null
      yield* sql`
        INSERT INTO worker (id, created, updated, name, work_pool_id, last_heartbeat_time, heartbeat_interval_seconds, status)
        VALUES (${yield* newId}, ${at}, ${at}, ${worker.name}, ${poolId}, ${at}, ${interval}, 'ONLINE')
        ON CONFLICT (work_pool_id, name) DO UPDATE SET
          updated = ${at}, last_heartbeat_time = ${at}, status = 'ONLINE',
          heartbeat_interval_seconds = coalesce(${interval}::integer, worker.heartbeat_interval_seconds)
      `
    })

    /** WorkPoolConflict when the pool is gone (deleted since the caller found it). */
    const heartbeat = (poolId: string, worker: Parameters<typeof beat>[1]) =>
      Effect.catchIf(beat(poolId, worker), isForeignKeyViolation, () => new WorkPoolConflict())

    const workers = SqlSchema.findAll({
      Request: AsGiven<{ readonly poolId: string; readonly filter: WorkerFilter | null | undefined } & Page>(),
      Result: WorkerRow,
      execute: (options) =>
        sql`
          SELECT * FROM worker
          WHERE work_pool_id = ${options.poolId} AND ${WorkerFilter.compile(sql, options.filter)}
          ORDER BY last_heartbeat_time DESC NULLS LAST, id
          LIMIT ${options.limit} OFFSET ${options.offset}
        `
    })

    const silentPools = SqlSchema.findAll({
      Request: AsGiven<Date>(),
      Result: IdRow,
      execute: (at) =>
        sql`
          UPDATE work_pool SET status = 'NOT_READY', updated = ${at}, last_transitioned_status_at = ${at}
          WHERE status = 'READY' AND NOT EXISTS (
            SELECT 1 FROM worker WHERE worker.work_pool_id = work_pool.id AND worker.status = 'ONLINE')
          RETURNING id
        `
    })

    const removeWorker = (poolId: string, name: string) =>
      Effect.map(sql`DELETE FROM worker WHERE work_pool_id = ${poolId} AND name = ${name} RETURNING id`, (rows) => rows.length > 0)

    /**
     * ONLINE workers that missed `multiple` heartbeat intervals (their own, else `fallbackSeconds`)
     * by `at` go OFFLINE; then READY pools without an ONLINE worker go NOT_READY.
     */
    const markSilentWorkers = (at: Date, options: { readonly multiple: number; readonly fallbackSeconds: number }) =>
      transaction(sql, Effect.gen(function* () {
        yield* sql`
          UPDATE worker SET status = 'OFFLINE', updated = ${at}
          WHERE status = 'ONLINE' AND last_heartbeat_time IS NOT NULL
            AND EXTRACT(EPOCH FROM (${at}::timestamptz - last_heartbeat_time))
              > coalesce(heartbeat_interval_seconds, ${options.fallbackSeconds}) * ${options.multiple}
        `
        const silent = yield* silentPools(at)
        yield* statusChanges.announce("work-pool", "NOT_READY", at, silent.map((r) => r.id))
      }))

    return sqlErrorsAsDefects({
      findByName,
      findById,
      findRecord,
      filter,
      count,
      createPool,
      update,
      remove,
      hasOnlineWorker,
      heartbeat,
      workers,
      removeWorker,
      markSilentWorkers
    })
  }),
  dependencies: [StatusChanges.Default, WorkQueuesRepo.Default]
}) {}
