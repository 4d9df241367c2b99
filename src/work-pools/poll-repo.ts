/**
 * What workers ask of pools and queues in SQL: the runs due to them (with queue priorities and pool
 * and queue concurrency limits), and which runs hold a pool's or queue's slots.
 */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven, CountRow } from "../database/rows.ts"
import { StatusChanges } from "../events/status-changes.ts"

export interface PollOptions {
  readonly poolId: string
  /** Only these queues (all of the pool's when undefined). */
  readonly queueIds: ReadonlyArray<string> | undefined
  readonly scheduledBefore: Date | null
  readonly scheduledAfter: Date | null
  readonly limit: number
}

/** A run holding a slot of its queue, as the concurrency status lists it. */
export const SlotHolder = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  state_type: Schema.NullOr(Schema.String),
  state_name: Schema.NullOr(Schema.String),
  start_time: Schema.NullOr(Schema.DateFromSelf),
  state_timestamp: Schema.NullOr(Schema.DateFromSelf),
  work_queue_id: Schema.NullOr(Schema.String)
})
export type SlotHolder = typeof SlotHolder.Type

/** What counting a queue polled changed: the queue or a deployment of it became READY. */
export interface PolledChange {
  readonly kind: "work-queue" | "deployment"
  readonly id: string
}

/** What a poll in one statement answers along with its runs. */
export interface PollTarget {
  readonly id: string
  readonly queues: ReadonlyArray<{ readonly id: string; readonly name: string }>
  readonly changed: ReadonlyArray<PolledChange>
}

const QueueCountRow = Schema.Struct({ work_queue_id: Schema.String, count: Schema.NumberFromString })

interface SlotQuery {
  readonly queueIds: ReadonlyArray<string>
  readonly withCancelling: boolean
}

export class PollRepo extends Effect.Service<PollRepo>()("baton/PollRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const statusChanges = yield* StatusChanges
    // The poll's statements type their rows by hand, not through row schemas: the worker poll is on the hot path (the bench's run lifecycle).

    /**
     * The query of what a poll of the pool named `poolName` reads first: the pool's id and its queues
     * named in `queueNames` (all its queues when undefined), by id and name; no row when there is no
     * such pool.
     */
    const pollTargetQuery = (poolName: string, queueNames: ReadonlyArray<string> | undefined) => sql`
      SELECT work_pool.id, coalesce((
        SELECT jsonb_agg(jsonb_build_object('id', work_queue.id, 'name', work_queue.name))
        FROM work_queue WHERE work_queue.work_pool_id = work_pool.id
          ${queueNames === undefined ? sql`` : sql`AND work_queue.name = ANY(${queueNames}::text[])`}
      ), '[]'::jsonb) AS queues
      FROM work_pool WHERE work_pool.name = ${poolName}`

    /** pollTargetQuery as a statement of its own; none when there is no such pool. */
    const findPollTarget = (poolName: string, queueNames: ReadonlyArray<string> | undefined) =>
      Effect.map(
        sql<{ id: string; queues: ReadonlyArray<{ id: string; name: string }> }>`${pollTargetQuery(poolName, queueNames)}`,
        (rows) => Option.fromNullable(rows[0])
      )

    /**
     * The CTEs that count the queues `queueIds` (a query of `id`s) as polled at `at` (a NOT_READY one
     * becomes READY), and the deployments assigned to them (they become READY), with the status
     * events' notes (events/status-changes.ts): as durable as the change. `changed` lists what changed.
     */
    const polledCtes = (queueIds: Statement.Fragment, at: Date) => sql`
      queues_changed AS (SELECT id FROM work_queue WHERE id IN (${queueIds}) AND status = 'NOT_READY'),
      queues_polled AS (
        UPDATE work_queue SET last_polled = ${at},
          status = CASE WHEN status = 'NOT_READY' THEN 'READY' ELSE status END
        WHERE id IN (${queueIds})),
      deployments_changed AS (
        SELECT id FROM deployment WHERE work_queue_id IN (${queueIds}) AND status IS DISTINCT FROM 'READY'),
      deployments_polled AS (
        UPDATE deployment SET status = 'READY', last_polled = ${at} WHERE work_queue_id IN (${queueIds})),
      changed AS (
        SELECT 'work-queue' AS kind, id FROM queues_changed
        UNION ALL SELECT 'deployment' AS kind, id FROM deployments_changed),
      noted AS (
        INSERT INTO event_outbox (body)
        SELECT jsonb_build_object('type', 'status', 'kind', kind, 'id', id, 'status', 'READY', 'at', ${at.toISOString()}::text)
        FROM changed)`

    /** Announces what a poll's `polledCtes` changed, once its transaction commits. */
    const announcePolled = (changed: ReadonlyArray<PolledChange>, at: Date) =>
      Effect.zipRight(
        statusChanges.announceNoted("work-queue", "READY", at, changed.filter((r) => r.kind === "work-queue").map((r) => r.id)),
        statusChanges.announceNoted("deployment", "READY", at, changed.filter((r) => r.kind === "deployment").map((r) => r.id))
      )

    /** The queues count as polled at `at`, and their deployments; one statement, and a status event for each change. */
    const markPolled = (queueIds: ReadonlyArray<string>, at: Date) =>
      Effect.flatMap(
        sql<PolledChange>`
          WITH ${polledCtes(sql`SELECT unnest(${queueIds}::uuid[])`, at)}
          SELECT kind, id FROM changed
        `,
        (rows) => announcePolled(rows, at)
      )

    /**
     * The worker poll: Scheduled runs of the pool's unpaused queues (none when the pool is paused),
     * each queue contributing no more than its free slots, the pool no more than its own; ordered
     * by queue priority, then scheduled time. A query of their ids with their queue and their
     * `position` in that order, for the statement that reads the runs (FlowRunsRepo.readListed).
     */
    const dueInPool = (options: PollOptions) =>
      dueQuery(
        sql`${options.poolId}`,
        options.queueIds === undefined ? undefined : sql`${options.queueIds}::uuid[]`,
        options
      )

    /** dueInPool with the pool's id and the queues' ids (an array, or all the pool's) as SQL of the statement. */
    const dueQuery = (
      poolId: Statement.Fragment,
      queueIds: Statement.Fragment | undefined,
      options: Omit<PollOptions, "poolId" | "queueIds">
    ) =>
      sql`
        WITH pool AS (
          SELECT id, concurrency_limit FROM work_pool WHERE id = ${poolId} AND NOT is_paused
        ),
        pool_room AS (
          SELECT CASE WHEN pool.concurrency_limit IS NULL THEN NULL ELSE GREATEST(0, pool.concurrency_limit - (
            SELECT count(*) FROM flow_run JOIN work_queue ON work_queue.id = flow_run.work_queue_id
            WHERE work_queue.work_pool_id = pool.id AND NOT work_queue.is_paused
              AND flow_run.state_type IN ('PENDING', 'RUNNING'))) END AS room
          FROM pool
        ),
        queues AS (
          SELECT work_queue.id, work_queue.priority,
            CASE WHEN work_queue.concurrency_limit IS NULL THEN NULL ELSE GREATEST(0, work_queue.concurrency_limit - (
              SELECT count(*) FROM flow_run
              WHERE flow_run.work_queue_id = work_queue.id AND flow_run.state_type IN ('PENDING', 'RUNNING'))) END AS room
          FROM work_queue JOIN pool ON pool.id = work_queue.work_pool_id
          WHERE NOT work_queue.is_paused
            ${queueIds === undefined ? sql`` : sql`AND work_queue.id = ANY(${queueIds})`}
        )
        SELECT due.id, queues.id AS work_queue_id,
          row_number() OVER (ORDER BY queues.priority, due.next_scheduled_start_time, due.id) AS position
        FROM queues CROSS JOIN LATERAL (
          SELECT flow_run.id, flow_run.next_scheduled_start_time FROM flow_run
          WHERE flow_run.work_queue_id = queues.id AND flow_run.state_type = 'SCHEDULED'
            AND (flow_run.empirical_policy ->> 'retry_type') IS DISTINCT FROM 'in_process'
            ${options.scheduledBefore === null ? sql`` : sql`AND flow_run.next_scheduled_start_time <= ${options.scheduledBefore}`}
            ${options.scheduledAfter === null ? sql`` : sql`AND flow_run.next_scheduled_start_time >= ${options.scheduledAfter}`}
          ORDER BY flow_run.next_scheduled_start_time, flow_run.id
          LIMIT LEAST(coalesce(queues.room, ${options.limit}), ${options.limit})
        ) due
        ORDER BY queues.priority, due.next_scheduled_start_time, due.id
        LIMIT LEAST(${options.limit}, coalesce((SELECT room FROM pool_room), ${options.limit}))
      `

    /**
     * A worker's poll of the pool named `poolName` (its queues named in `queueNames`, all of them
     * when undefined) as one statement: FlowRunsRepo.readListedAlong of `listed` (the due runs, as
     * dueInPool finds them) along with `along` (the pool's id, its queues named, and what counting
     * them polled changed). Only when every queue named is in the pool are runs listed and the queues
     * counted as polled; none of it when there is no such pool.
     */
    const pollInOne = (
      poolName: string,
      queueNames: ReadonlyArray<string> | undefined,
      options: Omit<PollOptions, "poolId" | "queueIds">,
      at: Date
    ) => {
      const complete = queueNames === undefined
        ? sql`TRUE`
        : sql`NOT EXISTS (SELECT 1 FROM unnest(${queueNames}::text[]) AS asked(name)
            WHERE asked.name NOT IN (SELECT elem ->> 'name' FROM target, jsonb_array_elements(target.queues) elem))`
      const along = {
        with: sql`
          target AS (${pollTargetQuery(poolName, queueNames)}),
          polled AS (
            SELECT (elem ->> 'id')::uuid AS id FROM target, jsonb_array_elements(target.queues) elem WHERE ${complete}
          ),
          ${polledCtes(sql`SELECT id FROM polled`, at)}`,
        from: sql`target`,
        columns: sql`jsonb_build_object('id', target.id, 'queues', target.queues,
          'changed', coalesce((SELECT jsonb_agg(jsonb_build_object('kind', kind, 'id', id)) FROM changed), '[]'::jsonb))`
      }
      const listed = dueQuery(sql`(SELECT id FROM target)`, sql`ARRAY(SELECT id FROM polled)`, options)
      return { along, listed }
    }

    /**
     * The legacy queue poll: Scheduled runs filed under the queue's name (or, for a queue with a
     * legacy filter, matching its tags and deployments), no more than its free slots, soonest first.
     */
    const dueInQueue = (
      queue: {
        readonly name: string
        readonly concurrency_limit: number | null
        readonly filter: { readonly tags: ReadonlyArray<string> | null; readonly deployment_ids: ReadonlyArray<string> | null } | null
      },
      options: { readonly scheduledBefore: Date | null; readonly limit: number }
    ) => {
      const legacy = queue.filter
      const matches = legacy === null
        ? sql`flow_run.work_queue_name = ${queue.name}`
        : sql.and([
          legacy.tags === null ? sql`TRUE` : sql`flow_run.tags @> ${JSON.stringify(legacy.tags)}::jsonb`,
          legacy.deployment_ids === null
            ? sql`TRUE`
            : sql`flow_run.deployment_id = ANY(${legacy.deployment_ids}::uuid[])`
        ])
      const holding = legacy === null ? sql`('PENDING', 'RUNNING', 'CANCELLING')` : sql`('PENDING', 'RUNNING')`
      const concurrencyLimit = queue.concurrency_limit
      return Effect.flatMap(
        concurrencyLimit === null
          ? Effect.succeed(options.limit)
          : Effect.map(
            sql<{ count: string }>`SELECT count(*) AS count FROM flow_run WHERE ${matches} AND flow_run.state_type IN ${holding}`,
            (rows) => Math.min(options.limit, Math.max(0, concurrencyLimit - Number(rows[0]!.count)))
          ),
        (limit) =>
          Effect.map(
            sql<{ id: string }>`
              SELECT flow_run.id FROM flow_run
              WHERE ${matches} AND flow_run.state_type = 'SCHEDULED'
                ${options.scheduledBefore === null ? sql`` : sql`AND flow_run.next_scheduled_start_time <= ${options.scheduledBefore}`}
              ORDER BY flow_run.next_scheduled_start_time, flow_run.id
              LIMIT ${limit}
            `,
            (rows) => rows.map((r) => r.id)
          )
      )
    }

    const holding = (withCancelling: boolean) =>
      withCancelling ? sql`('PENDING', 'RUNNING', 'CANCELLING')` : sql`('PENDING', 'RUNNING')`

    const slotHolderRows = SqlSchema.findAll({
      Request: AsGiven<SlotQuery & { readonly offset: number; readonly limit: number }>(),
      Result: SlotHolder,
      execute: (query) =>
        sql`
          SELECT id, name, state_type, state_name, start_time, state_timestamp, work_queue_id FROM (
            SELECT flow_run.*, row_number() OVER (PARTITION BY work_queue_id ORDER BY id) AS rank FROM flow_run
            WHERE work_queue_id = ANY(${query.queueIds}::uuid[]) AND state_type IN ${holding(query.withCancelling)}
          ) holders
          WHERE rank > ${query.offset} AND rank <= ${query.offset + query.limit}
          ORDER BY work_queue_id, id
        `
    })

    /**
     * Runs holding slots (Pending or Running; Cancelling too for a legacy queue) of the given queues:
     * a page of each queue's, by id.
     */
    const slotHolders = (queueIds: ReadonlyArray<string>, options: { readonly withCancelling: boolean; readonly offset: number; readonly limit: number }) =>
      slotHolderRows({ ...options, queueIds })

    const slotCountRows = SqlSchema.findAll({
      Request: AsGiven<SlotQuery>(),
      Result: QueueCountRow,
      execute: (query) =>
        sql`
          SELECT work_queue_id, count(*) AS count FROM flow_run
          WHERE work_queue_id = ANY(${query.queueIds}::uuid[]) AND state_type IN ${holding(query.withCancelling)}
          GROUP BY work_queue_id
        `
    })

    /** How many runs hold slots of each of the queues. */
    const slotCounts = (queueIds: ReadonlyArray<string>, options: { readonly withCancelling: boolean }) =>
      Effect.map(slotCountRows({ ...options, queueIds }), (rows) => new Map(rows.map((r) => [r.work_queue_id, r.count])))

    const lateRunCount = SqlSchema.single({
      Request: Schema.String,
      Result: CountRow,
      execute: (queueId) => sql`SELECT count(*) AS count FROM flow_run WHERE work_queue_id = ${queueId} AND state_name = 'Late'`
    })

    /** The queue's runs marked Late. */
    const lateRuns = (queueId: string) => Effect.map(lateRunCount(queueId), (row) => row.count)

    /**
     * When the soonest Scheduled run of the queues past `after` is scheduled (the runs a poll whose
     * window ends at `after` does not see yet), not before `notBefore`; null when there is none.
     * One index probe per queue.
     */
    const nextScheduledTime = (queueIds: ReadonlyArray<string>, options: { readonly after: Date; readonly notBefore: Date | null }) =>
      Effect.map(
        sql<{ next: Date | null }>`
          SELECT min(soonest.at) AS next
          FROM unnest(${queueIds}::uuid[]) AS queue(id) CROSS JOIN LATERAL (
            SELECT flow_run.next_scheduled_start_time AS at FROM flow_run
            WHERE flow_run.work_queue_id = queue.id AND flow_run.state_type = 'SCHEDULED'
              AND flow_run.next_scheduled_start_time > ${options.after}
              ${options.notBefore === null ? sql`` : sql`AND flow_run.next_scheduled_start_time >= ${options.notBefore}`}
              AND (flow_run.empirical_policy ->> 'retry_type') IS DISTINCT FROM 'in_process'
            ORDER BY flow_run.next_scheduled_start_time
            LIMIT 1
          ) soonest
        `,
        (rows) => (rows[0]?.next == null ? null : new Date(rows[0].next))
      )

    // dueInPool and pollInOne are SQL to embed, not statements of their own.
    return {
      ...sqlErrorsAsDefects({ findPollTarget, markPolled, dueInQueue, slotHolders, slotCounts, lateRuns, nextScheduledTime }),
      dueInPool,
      pollInOne,
      announcePolled
    }
  }),
  dependencies: [StatusChanges.Default]
}) {}
