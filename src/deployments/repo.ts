/** Deployments and their schedules in SQL. */
import { SqlClient } from "@effect/sql"
import { StatusChanges } from "../events/status-changes.ts"
import { Effect, Option, Schema } from "effect"
import { isForeignKeyViolation, isIntegrityViolation, isUniqueViolation, sqlErrorsAsDefects } from "../database/errors.ts"
import { queryCondition } from "../queries/query.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { Deployment, type DeploymentFilter, DeploymentSchedule, type DeploymentSort } from "./schemas.ts"
import { DeploymentConflict, deploymentNotFoundDot, ScheduleSlugTaken } from "./errors.ts"
import type { Schedule } from "./schedules.ts"

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

const decodeDeployment = Schema.decodeUnknown(Deployment)
const decodeSchedules = Schema.decodeUnknown(Schema.Array(DeploymentSchedule))
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
    const selectRows = (condition: ReturnType<typeof where>, tail = sql``, extra = sql``) =>
        sql<{ record: unknown; job_template?: Record<string, unknown> | null }>`
          SELECT to_jsonb(deployment.*) || jsonb_build_object(
            'labels', coalesce(deployment.labels, '{}'::jsonb),
            'work_queue_name', coalesce(work_queue.name, deployment.work_queue_name),
            'work_pool_name', work_pool.name,
            'concurrency_limit', NULL,
            'global_concurrency_limit', to_jsonb(gcl.*),
            'schedules', coalesce((
              SELECT jsonb_agg(to_jsonb(s.*) ORDER BY s.updated DESC, s.id)
              FROM deployment_schedule s WHERE s.deployment_id = deployment.id), '[]'::jsonb)
          ) AS record ${extra}
          FROM deployment
            LEFT JOIN work_queue ON work_queue.id = deployment.work_queue_id
            LEFT JOIN work_pool ON work_pool.id = work_queue.work_pool_id
            LEFT JOIN concurrency_limit_v2 gcl ON gcl.id = deployment.concurrency_limit_id
          WHERE ${condition}
          ${tail}
        `

    const selectRecords = (condition: ReturnType<typeof where>, tail = sql``) =>
      Effect.flatMap(selectRows(condition, tail), (rows) => Effect.orDie(Effect.forEach(rows, (row) => decodeDeployment(row.record))))

    const read = (id: string) => Effect.map(selectRecords(sql`deployment.id = ${id}`), (rows) => rows[0])

    /** A deployment with its work pool's base job template (undefined without a pool), in one query. */
    const readWithJobTemplate = (id: string) =>
      Effect.flatMap(selectRows(sql`deployment.id = ${id}`, sql``, sql`, work_pool.base_job_template AS job_template`), (rows) =>
        rows[0] === undefined
          ? Effect.succeed(undefined)
          : Effect.map(Effect.orDie(decodeDeployment(rows[0].record)), (deployment) => ({
            deployment,
            jobTemplate: rows[0]!.job_template ?? undefined
          })))

    const readByName = (flowName: string, name: string) =>
      Effect.map(
        selectRecords(sql`deployment.name = ${name} AND deployment.flow_id = (SELECT id FROM flow WHERE name = ${flowName})`),
        (rows) => rows[0]
      )

    /** The stored columns of one deployment (no joins), for the rules that read before they write. */
    const readRow = (id: string) =>
      Effect.map(
        sql<{
          id: string
          flow_id: string
          parameters: Record<string, unknown>
          parameter_openapi_schema: Record<string, unknown> | null
          enforce_parameter_schema: boolean
          concurrency_limit_id: string | null
          concurrency_options: { readonly collision_strategy?: string; readonly grace_period_seconds?: number | null } | null
          work_queue_id: string | null
          work_queue_name: string | null
        }>`SELECT * FROM deployment WHERE id = ${id}`,
        (rows) => rows[0]
      )

    const filter = (options: {
      readonly query: DeploymentQuery
      readonly sort: DeploymentSort
      readonly offset: number
      readonly limit: number
    }) =>
      selectRecords(
        where(options.query),
        sql`ORDER BY ${sql.unsafe(orderBy[options.sort])} LIMIT ${options.limit} OFFSET ${options.offset}`
      )

    const count = (query: DeploymentQuery) =>
      Effect.map(sql<{ count: string }>`SELECT count(*) AS count FROM deployment WHERE ${where(query)}`, (rows) =>
        Number(rows[0]!.count)
      )

    /** Ids of up to `limit` deployments matching the filter, by name. */
    const idsMatching = (deployments: DeploymentFilter | null | undefined, limit: number) =>
      Effect.map(
        sql<{ id: string }>`
          SELECT id FROM deployment WHERE ${where({ deployments })} ORDER BY name, id LIMIT ${limit}
        `,
        (rows) => rows.map((r) => r.id)
      )

    /**
     * Inserts the deployment, or on a flow and name already taken overwrites that one with
     * `changes` only. Says which, and the row's id.
     */
    const upsert = Effect.fn("DeploymentsRepo.upsert")(function* (insert: Columns, changes: Columns) {
      const id = yield* newId
      const at = yield* now
      const rows = yield* sql<{ id: string; inserted: boolean }>`
        INSERT INTO deployment ${sql.insert({ ...insert, id, created: at, updated: at })}
        ON CONFLICT (flow_id, name) DO UPDATE SET ${sql.update({ ...changes, updated: at })}
        RETURNING id, (xmax = 0) AS inserted
      `
      return { id: rows[0]!.id, created: rows[0]!.inserted }
    })

    /** Sets the given columns (and `updated`); false when there is no such deployment. */
    const update = Effect.fn("DeploymentsRepo.update")(function* (id: string, changes: Columns) {
      const at = yield* now
      const rows = yield* sql`UPDATE deployment SET ${sql.update({ ...changes, updated: at })} WHERE id = ${id} RETURNING id`
      return rows.length > 0
    })

    /** Deletes the deployment; its schedules go with it. False when there is no such deployment. */
    const remove = (id: string) =>
      Effect.map(sql`DELETE FROM deployment WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    /** Marks the deployments polled now and READY, leaving `updated` alone (the scheduler watches it). */
    const markReady = (ids: ReadonlyArray<string>, at: Date) =>
      Effect.flatMap(
        sql<{ id: string }>`
          WITH changed AS (SELECT id FROM deployment WHERE id = ANY(${ids}::uuid[]) AND status IS DISTINCT FROM 'READY'),
               polled AS (UPDATE deployment SET status = 'READY', last_polled = ${at} WHERE id = ANY(${ids}::uuid[]))
          SELECT id FROM changed
        `,
        (rows) => statusChanges.announce("deployment", "READY", at, rows.map((r) => r.id))
      )

    /** Marks the deployments of the queues polled now and READY, leaving `updated` alone. */
    /**
     * Marks NOT_READY the READY deployments not polled since `before`, unless their work queue was
     * polled since then.
     */
    const markStale = (before: Date, at: Date = before) =>
      Effect.flatMap(
        sql<{ id: string }>`
          UPDATE deployment SET status = 'NOT_READY'
          WHERE status = 'READY' AND last_polled IS NOT NULL AND last_polled < ${before}
            AND NOT EXISTS (
              SELECT 1 FROM work_queue
              WHERE work_queue.id = deployment.work_queue_id AND work_queue.last_polled >= ${before})
          RETURNING id
        `,
        (rows) => statusChanges.announce("deployment", "NOT_READY", at, rows.map((r) => r.id))
      )

    const readSchedules = (deploymentId: string) =>
      Effect.flatMap(
        sql<{ schedules: unknown }>`
          SELECT coalesce(jsonb_agg(to_jsonb(s.*) ORDER BY s.updated DESC, s.id), '[]'::jsonb) AS schedules
          FROM deployment_schedule s WHERE s.deployment_id = ${deploymentId}
        `,
        (rows) => Effect.orDie(decodeSchedules(rows[0]!.schedules))
      )

    /**
     * Stores schedules for a deployment; the stored records, in the order given. They are what
     * this statement inserted: a read of the deployment's schedules afterwards could already see
     * another request's replacement. One JSON parameter carries every row, however many there are.
     */
    const createSchedules = Effect.fn("DeploymentsRepo.createSchedules")(function* (
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
      const inserted = yield* sql<{ schedules: unknown }>`
        WITH inserted AS (
          INSERT INTO deployment_schedule (id, created, updated, deployment_id, schedule, active, max_scheduled_runs, parameters, slug)
          SELECT r.id, ${at}::timestamptz, ${at}::timestamptz, ${deploymentId}::uuid, r.schedule, r.active, r.max_scheduled_runs, r.parameters, r.slug
          FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(
            id uuid, schedule jsonb, active boolean, max_scheduled_runs integer, parameters jsonb, slug text)
          RETURNING *
        )
        SELECT coalesce(jsonb_agg(to_jsonb(inserted.*)), '[]'::jsonb) AS schedules FROM inserted
      `
      const stored = yield* Effect.orDie(decodeSchedules(inserted[0]!.schedules))
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
    const updateSchedule = Effect.fn("DeploymentsRepo.updateSchedule")(function* (
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
      find: (id: string) => Effect.map(read(id), Option.fromNullable),
      findByName: (flowName: string, name: string) => Effect.map(readByName(flowName, name), Option.fromNullable),
      findRow: (id: string) => Effect.map(readRow(id), Option.fromNullable),
      findWithJobTemplate: (id: string) => Effect.map(readWithJobTemplate(id), Option.fromNullable),
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
