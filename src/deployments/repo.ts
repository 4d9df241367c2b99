/** Deployments and their schedules in SQL. */
import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { StatusChanges } from "../events/status-changes.ts"
import { Effect, Option, Schema } from "effect"
import { isForeignKeyViolation, isIntegrityViolation, isUniqueViolation, sqlErrorsAsDefects } from "../database/errors.ts"
import { transaction } from "../database/transactions.ts"
import { AsGiven, IdRow, type SortedPage, countWhere, findRowBy } from "../database/rows.ts"
import { JsonObject } from "../domain/schemas.ts"
import { queryCondition } from "../queries/query.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { Deployment, type DeploymentFilter, DeploymentSchedule, type DeploymentSort } from "./schemas.ts"
import { DeploymentConflict, deploymentNotFoundDot, ScheduleSlugTaken } from "./errors.ts"
import type { Schedule } from "./schedules.ts"
import { traced } from "../domain/traced.ts"

/** A deployment's columns a run made from it takes (DeploymentRuns.createRun). */
export type RunSource = Pick<
  Deployment,
  | "id" | "flow_id" | "version" | "parameters" | "enforce_parameter_schema" | "parameter_openapi_schema" | "job_variables"
  | "infrastructure_document_id" | "tags" | "labels" | "work_queue_id" | "work_queue_name" | "work_pool_name"
>

/** A work queue named for a run, as its deployment's pool has it. */
export interface NamedQueue {
  readonly id: string
  readonly name: string
}

/** The filters a deployment query combines: the deployments' own and those of related objects. */
export type DeploymentQuery = Readonly<Record<string, unknown>>

const orderBy: Record<DeploymentSort, string> = {
  CREATED_DESC: "deployment.created DESC, deployment.id",
  UPDATED_DESC: "deployment.updated DESC, deployment.id",
  NAME_ASC: "deployment.name ASC, deployment.id",
  NAME_DESC: "deployment.name DESC, deployment.id"
}

/** A deployment column's value as bound in SQL: JSON columns as JSON text, the rest as they are. */
export type Columns = Readonly<Record<string, unknown>>

/** A schedule to store. */
export interface NewSchedule {
  readonly schedule: Schedule
  readonly active: boolean
  readonly max_scheduled_runs: number | null
  readonly parameters: Record<string, unknown>
  readonly slug: string | null
}

/** Changes to a stored schedule; only the given fields change. */
export interface ScheduleChanges {
  readonly schedule?: Schedule
  readonly active?: boolean
  readonly max_scheduled_runs?: number
  readonly parameters?: Record<string, unknown>
  readonly slug?: string | null
}

/**
 * A deployment's record as answered, built in SQL as JSON (its timestamps ISO strings): the wire's
 * schema decodes it.
 */
const RecordRow = Schema.Struct({ record: Deployment })

/** The columns of a row of `deployment` the rules read before they write (no joins). */
const DeploymentRulesRow = Schema.Struct({
  id: Schema.String,
  flow_id: Schema.String,
  parameters: JsonObject,
  parameter_openapi_schema: Schema.NullOr(JsonObject),
  enforce_parameter_schema: Schema.Boolean,
  concurrency_limit_id: Schema.NullOr(Schema.String),
  concurrency_options: Schema.NullOr(Schema.Struct({
    collision_strategy: Schema.optional(Schema.String),
    grace_period_seconds: Schema.optional(Schema.NullOr(Schema.Number))
  })),
  work_queue_id: Schema.NullOr(Schema.String),
  work_queue_name: Schema.NullOr(Schema.String)
})

/** A deployment's schedules as one JSON array, decoded by the wire's schema. */
const SchedulesRow = Schema.Struct({ schedules: Schema.Array(DeploymentSchedule) })

const UpsertedRow = Schema.Struct({ id: Schema.String, inserted: Schema.Boolean })

const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((r) => r.id)

const encodeScheduleValue = Schema.encodeSync(DeploymentSchedule.fields.schedule)
const encodeSchedule = (schedule: Schedule) => JSON.stringify(encodeScheduleValue(schedule))

export class DeploymentsRepo extends Effect.Service<DeploymentsRepo>()("baton/DeploymentsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const statusChanges = yield* StatusChanges
    const where = (query: DeploymentQuery) => queryCondition(sql, "deployment", query)

    /**
     * Each deployment as one JSON record in the wire shape: its queue's current name and pool, its
     * schedules (most recently updated first), its global concurrency limit.
     */
    const selectRows = SqlSchema.findAll({
      Request: AsGiven<{ readonly condition: Statement.Fragment; readonly tail?: Statement.Fragment }>(),
      Result: RecordRow,
      execute: ({ condition, tail }) =>
        sql`
          SELECT to_jsonb(deployment.*) || jsonb_build_object(
            'labels', coalesce(deployment.labels, '{}'::jsonb),
            'work_queue_name', coalesce(work_queue.name, deployment.work_queue_name),
            'work_pool_name', work_pool.name,
            'concurrency_limit', NULL,
            'global_concurrency_limit', to_jsonb(gcl.*),
            'schedules', coalesce((
              SELECT jsonb_agg(to_jsonb(s.*) ORDER BY s.updated DESC, s.id)
              FROM deployment_schedule s WHERE s.deployment_id = deployment.id), '[]'::jsonb)
          ) AS record
          FROM deployment
            LEFT JOIN work_queue ON work_queue.id = deployment.work_queue_id
            LEFT JOIN work_pool ON work_pool.id = work_queue.work_pool_id
            LEFT JOIN concurrency_limit_v2 gcl ON gcl.id = deployment.concurrency_limit_id
          WHERE ${condition}
          ${tail ?? sql``}
        `
    })

    const selectRecords = (condition: Statement.Fragment, tail?: Statement.Fragment) =>
      Effect.map(selectRows(tail === undefined ? { condition } : { condition, tail }), (rows) => rows.map((row) => row.record))

    const find = (id: string) => Effect.map(selectRecords(sql`deployment.id = ${id}`), (rows) => Option.fromNullable(rows[0]))

    /**
     * What runs are made from (`RunSource`): the deployment's columns a run takes, its pool's base
     * job template (undefined without a pool) and, with `queueName`, the queue of that name in its
     * pool (`namedQueue`, none when there is none), in one statement. Typed by hand, not decoded:
     * the columns are the database's own (a schema's decode of the whole record cost more CPU than
     * the statement, docs/performance.md "Sixteenth round").
     */
    const findRunSource = (id: string, queueName?: string) =>
      Effect.map(
        sql<RunSource & { readonly job_template: Record<string, unknown> | null; readonly named_queue?: NamedQueue | null }>`
          SELECT deployment.id, deployment.flow_id, deployment.version, deployment.parameters,
            deployment.enforce_parameter_schema, deployment.parameter_openapi_schema, deployment.job_variables,
            deployment.infrastructure_document_id, deployment.tags, coalesce(deployment.labels, '{}'::jsonb) AS labels,
            deployment.work_queue_id, coalesce(work_queue.name, deployment.work_queue_name) AS work_queue_name,
            work_pool.name AS work_pool_name, work_pool.base_job_template AS job_template
            ${queueName === undefined ? sql`` : sql`, (SELECT jsonb_build_object('id', named.id, 'name', named.name)
              FROM work_queue named WHERE named.work_pool_id = work_pool.id AND named.name = ${queueName}) AS named_queue`}
          FROM deployment
            LEFT JOIN work_queue ON work_queue.id = deployment.work_queue_id
            LEFT JOIN work_pool ON work_pool.id = work_queue.work_pool_id
          WHERE deployment.id = ${id}
        `,
        (rows) =>
          Option.map(Option.fromNullable(rows[0]), ({ job_template, named_queue, ...deployment }) => ({
            deployment,
            jobTemplate: job_template ?? undefined,
            ...(queueName === undefined ? {} : { namedQueue: { name: queueName, queue: Option.fromNullable(named_queue) } })
          }))
      )

    const findByName = (flowName: string, name: string) =>
      Effect.map(
        selectRecords(sql`deployment.name = ${name} AND deployment.flow_id = (SELECT id FROM flow WHERE name = ${flowName})`),
        (rows) => Option.fromNullable(rows[0])
      )

    /** The stored columns of one deployment (no joins), for the rules that read before they write. */
    const findRow = findRowBy(sql, "deployment", "id", DeploymentRulesRow)

    const filter = (options: { readonly query: DeploymentQuery } & SortedPage<DeploymentSort>) =>
      selectRecords(
        where(options.query),
        sql`ORDER BY ${sql.unsafe(orderBy[options.sort])} LIMIT ${options.limit} OFFSET ${options.offset}`
      )

    const counted = countWhere(sql, "deployment")
    const count = (query: DeploymentQuery) => counted(where(query))

    const matchingIds = SqlSchema.findAll({
      Request: AsGiven<{ readonly deployments: DeploymentFilter | null | undefined; readonly limit: number }>(),
      Result: IdRow,
      execute: ({ deployments, limit }) => sql`SELECT id FROM deployment WHERE ${where({ deployments })} ORDER BY name, id LIMIT ${limit}`
    })

    /** Ids of up to `limit` deployments matching the filter, by name. */
    const idsMatching = (deployments: DeploymentFilter | null | undefined, limit: number) =>
      Effect.map(matchingIds({ deployments, limit }), ids)

    const upsertRow = SqlSchema.single({
      Request: AsGiven<{ readonly insert: Columns; readonly changes: Columns }>(),
      Result: UpsertedRow,
      execute: ({ changes, insert }) =>
        sql`
          INSERT INTO deployment ${sql.insert(insert)}
          ON CONFLICT (flow_id, name) DO UPDATE SET ${sql.update(changes)}
          RETURNING id, (xmax = 0) AS inserted
        `
    })

    /**
     * Inserts the deployment, or on a flow and name already taken overwrites that one with
     * `changes` only. Says which, and the row's id.
     */
    const upsert = traced("DeploymentsRepo.upsert")(function* (insert: Columns, changes: Columns) {
      const id = yield* newId
      const at = yield* now
      const row = yield* upsertRow({ insert: { ...insert, id, created: at, updated: at }, changes: { ...changes, updated: at } })
      return { id: row.id, created: row.inserted }
    })

    /** Sets the given columns (and `updated`); false when there is no such deployment. */
    const update = traced("DeploymentsRepo.update")(function* (id: string, changes: Columns) {
      const at = yield* now
      const rows = yield* sql`UPDATE deployment SET ${sql.update({ ...changes, updated: at })} WHERE id = ${id} RETURNING id`
      return rows.length > 0
    })

    /** Deletes the deployment; its schedules go with it. False when there is no such deployment. */
    const remove = (id: string) =>
      Effect.map(sql`DELETE FROM deployment WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    const readiedIds = SqlSchema.findAll({
      Request: AsGiven<{ readonly ids: ReadonlyArray<string>; readonly at: Date }>(),
      Result: IdRow,
      execute: ({ at, ids }) =>
        sql`
          WITH changed AS (SELECT id FROM deployment WHERE id = ANY(${ids}::uuid[]) AND status IS DISTINCT FROM 'READY'),
               polled AS (UPDATE deployment SET status = 'READY', last_polled = ${at} WHERE id = ANY(${ids}::uuid[])),
               -- The status events' notes (events/status-changes.ts), with the change: as durable as it.
               noted AS (
                 INSERT INTO event_outbox (body)
                 SELECT jsonb_build_object('type', 'status', 'kind', 'deployment', 'id', id, 'status', 'READY', 'at', ${at.toISOString()}::text)
                 FROM changed)
          SELECT id FROM changed
        `
    })

    /** Marks the deployments polled now and READY, leaving `updated` alone (the scheduler watches it). */
    const markReady = (deploymentIds: ReadonlyArray<string>, at: Date) =>
      Effect.flatMap(readiedIds({ ids: deploymentIds, at }), (rows) => statusChanges.announceNoted("deployment", "READY", at, ids(rows)))

    const staleIds = SqlSchema.findAll({
      Request: AsGiven<{ readonly before: Date }>(),
      Result: IdRow,
      execute: ({ before }) =>
        sql`
          UPDATE deployment SET status = 'NOT_READY'
          WHERE status = 'READY' AND last_polled IS NOT NULL AND last_polled < ${before}
            AND NOT EXISTS (
              SELECT 1 FROM work_queue
              WHERE work_queue.id = deployment.work_queue_id AND work_queue.last_polled >= ${before})
          RETURNING id
        `
    })

    /**
     * Marks NOT_READY the READY deployments not polled since `before`, unless their work queue was
     * polled since then.
     */
    const markStale = (before: Date, at: Date = before) =>
      transaction(sql, Effect.flatMap(staleIds({ before }), (rows) => statusChanges.announce("deployment", "NOT_READY", at, ids(rows))))

    const schedulesOf = SqlSchema.single({
      Request: Schema.String,
      Result: SchedulesRow,
      execute: (deploymentId) =>
        sql`
          SELECT coalesce(jsonb_agg(to_jsonb(s.*) ORDER BY s.updated DESC, s.id), '[]'::jsonb) AS schedules
          FROM deployment_schedule s WHERE s.deployment_id = ${deploymentId}
        `
    })

    const readSchedules = (deploymentId: string) => Effect.map(schedulesOf(deploymentId), (row) => row.schedules)

    const insertSchedules = SqlSchema.single({
      Request: AsGiven<{ readonly deploymentId: string; readonly at: Date; readonly rows: ReadonlyArray<unknown> }>(),
      Result: SchedulesRow,
      execute: ({ at, deploymentId, rows }) =>
        sql`
          WITH inserted AS (
            INSERT INTO deployment_schedule (id, created, updated, deployment_id, schedule, active, max_scheduled_runs, parameters, slug)
            SELECT r.id, ${at}::timestamptz, ${at}::timestamptz, ${deploymentId}::uuid, r.schedule, r.active, r.max_scheduled_runs, r.parameters, r.slug
            FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(
              id uuid, schedule jsonb, active boolean, max_scheduled_runs integer, parameters jsonb, slug text)
            RETURNING *
          )
          SELECT coalesce(jsonb_agg(to_jsonb(inserted.*)), '[]'::jsonb) AS schedules FROM inserted
        `
    })

    /**
     * Stores schedules for a deployment; the stored records, in the order given. They are what
     * this statement inserted: a read of the deployment's schedules afterwards could already see
     * another request's replacement. One JSON parameter carries every row, however many there are.
     */
    const createSchedules = traced("DeploymentsRepo.createSchedules")(function* (
      deploymentId: string,
      schedules: ReadonlyArray<NewSchedule>
    ) {
      if (schedules.length === 0) return [] as ReadonlyArray<DeploymentSchedule>
      const at = yield* now
      const rows = []
      for (const s of schedules) {
        rows.push({
          id: yield* newId,
          schedule: encodeScheduleValue(s.schedule),
          active: s.active,
          max_scheduled_runs: s.max_scheduled_runs,
          parameters: s.parameters,
          slug: s.slug
        })
      }
      const { schedules: stored } = yield* insertSchedules({ deploymentId, at, rows })
      const byId = new Map(stored.map((schedule) => [schedule.id, schedule]))
      return rows.map((row) => byId.get(row.id)!)
    })

    const scheduleColumns = (changes: ScheduleChanges) => ({
      ...(changes.schedule !== undefined ? { schedule: encodeSchedule(changes.schedule) } : {}),
      ...(changes.active !== undefined ? { active: changes.active } : {}),
      ...(changes.max_scheduled_runs !== undefined ? { max_scheduled_runs: changes.max_scheduled_runs } : {}),
      ...(changes.parameters !== undefined ? { parameters: JSON.stringify(changes.parameters) } : {}),
      ...(changes.slug !== undefined ? { slug: changes.slug } : {})
    })

    /** Changes one schedule of the deployment, by id or by slug; false when it has no such schedule. */
    const updateSchedule = traced("DeploymentsRepo.updateSchedule")(function* (
      deploymentId: string,
      target: { readonly id: string } | { readonly slug: string },
      changes: ScheduleChanges
    ) {
      const at = yield* now
      const match = "id" in target ? sql`id = ${target.id}` : sql`slug = ${target.slug}`
      const rows = yield* sql`
        UPDATE deployment_schedule SET ${sql.update({ ...scheduleColumns(changes), updated: at })}
        WHERE deployment_id = ${deploymentId} AND ${match}
        RETURNING id
      `
      return rows.length > 0
    })

    /** Deletes one schedule of the deployment, or all of them without `scheduleId`; how many went. */
    const deleteSchedules = (deploymentId: string, scheduleId?: string) =>
      Effect.map(
        sql`
          DELETE FROM deployment_schedule
          WHERE deployment_id = ${deploymentId} ${scheduleId === undefined ? sql`` : sql`AND id = ${scheduleId}`}
          RETURNING id
        `,
        (rows) => rows.length
      )

    /**
     * Deletes the deployment's runs still waiting in Scheduled that never ran (not those awaiting a
     * concurrency slot): only auto-scheduled ones and only future ones when asked.
     */
    const deleteScheduledRuns = (
      deploymentId: string,
      options: { readonly autoScheduledOnly: boolean; readonly after?: Date }
    ) =>
      sql`
        DELETE FROM flow_run
        WHERE deployment_id = ${deploymentId} AND state_type = 'SCHEDULED'
          AND state_name IS DISTINCT FROM 'AwaitingConcurrencySlot' AND run_count = 0
          ${options.autoScheduledOnly ? sql`AND auto_scheduled = true` : sql``}
          ${options.after === undefined ? sql`` : sql`AND next_scheduled_start_time > ${options.after}`}
      `

    return sqlErrorsAsDefects({
      find,
      findByName,
      findRow,
      findRunSource,
      filter,
      count,
      idsMatching,
      // A flow, queue, block or limit that does not exist (or no longer does) is a conflict.
      upsert: (insert: Columns, changes: Columns) =>
        upsert(insert, changes).pipe(Effect.catchIf(isIntegrityViolation, () => new DeploymentConflict())),
      update: (id: string, changes: Columns) =>
        update(id, changes).pipe(Effect.catchIf(isIntegrityViolation, () => new DeploymentConflict())),
      remove,
      markReady,
      markStale,
      readSchedules,
      // A slug the deployment already has; a deployment deleted since it was read.
      createSchedules: (deploymentId: string, schedules: ReadonlyArray<NewSchedule>) =>
        createSchedules(deploymentId, schedules).pipe(
          Effect.catchIf(isUniqueViolation, () => new ScheduleSlugTaken()),
          Effect.catchIf(isForeignKeyViolation, () => deploymentNotFoundDot())
        ),
      updateSchedule: (deploymentId: string, target: { readonly id: string } | { readonly slug: string }, changes: ScheduleChanges) =>
        updateSchedule(deploymentId, target, changes).pipe(Effect.catchIf(isUniqueViolation, () => new ScheduleSlugTaken())),
      deleteSchedules,
      deleteScheduledRuns
    })
  }),
  dependencies: [StatusChanges.Default]
}) {}
