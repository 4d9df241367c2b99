/**
 * The scheduler's SQL: which deployments need runs, what their schedules are, and inserting the
 * runs they ask for in batches (idempotent by the scheduled-run key).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { isIntegrityViolation, sqlErrorsAsDefects } from "../database/errors.ts"
import { newId } from "../domain/ids.ts"
import { generateName } from "../domain/names.ts"
import { emptyStateDetails, StateDetails } from "../domain/states.ts"
import { defaultFlowRunPolicy } from "../flow-runs/schemas.ts"
import { DeploymentConflict } from "./errors.ts"
import { Schedule } from "./schedules.ts"
import type { ScheduledRun, SchedulingDeployment, SchedulingSchedule } from "./scheduling.ts"
import { traced } from "../domain/traced.ts"

const decodeSchedule = Schema.decodeUnknownSync(Schedule)
const encodeDetails = Schema.encodeSync(StateDetails)

export interface DeploymentToSchedule extends SchedulingDeployment {
  readonly schedules: ReadonlyArray<SchedulingSchedule>
}

export class ScheduledRunsRepo extends Effect.Service<ScheduledRunsRepo>()("baton/ScheduledRunsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const activeSchedule = sql`
      EXISTS (SELECT 1 FROM deployment_schedule s WHERE s.deployment_id = deployment.id AND s.active = true)
    `

    /**
     * Ids of unpaused deployments with an active schedule that has fewer than `minRuns` future
     * auto-scheduled runs, or whose last one is earlier than `until`: a page in id order after `afterId`.
     */
    const idsNeedingRuns = (options: {
      readonly at: Date
      readonly minRuns: number
      readonly until: Date
      readonly afterId: string | null
      readonly limit: number
    }) =>
      Effect.map(
        sql<{ id: string }>`
          SELECT deployment.id FROM deployment
          WHERE deployment.paused IS NOT TRUE
            ${options.afterId === null ? sql`` : sql`AND deployment.id > ${options.afterId}`}
            AND EXISTS (
              SELECT 1 FROM deployment_schedule s
              CROSS JOIN LATERAL (
                SELECT count(*) AS runs, max(r.next_scheduled_start_time) AS last
                FROM flow_run r
                WHERE r.deployment_id = s.deployment_id AND r.auto_scheduled = true AND r.state_type = 'SCHEDULED'
                  AND r.created_by ->> 'id' = s.id::text AND r.next_scheduled_start_time >= ${options.at}
              ) future
              WHERE s.deployment_id = deployment.id AND s.active = true
                AND (future.runs < ${options.minRuns} OR future.last < ${options.until})
            )
          ORDER BY deployment.id
          LIMIT ${options.limit}
        `,
        (rows) => rows.map((r) => r.id)
      )

    /** Ids of unpaused deployments with an active schedule updated since `since`: a page in id order. */
    const idsUpdatedSince = (options: { readonly since: Date; readonly afterId: string | null; readonly limit: number }) =>
      Effect.map(
        sql<{ id: string }>`
          SELECT deployment.id FROM deployment
          WHERE deployment.paused IS NOT TRUE AND deployment.updated >= ${options.since} AND ${activeSchedule}
            ${options.afterId === null ? sql`` : sql`AND deployment.id > ${options.afterId}`}
          ORDER BY deployment.id
          LIMIT ${options.limit}
        `,
        (rows) => rows.map((r) => r.id)
      )

    /** The deployments with their active schedules (most recently updated first), in one query. */
    const readForScheduling = (ids: ReadonlyArray<string>) =>
      Effect.map(
        sql<
          Omit<DeploymentToSchedule, "schedules"> & {
            schedules: Array<Omit<SchedulingSchedule, "schedule"> & { schedule: unknown }>
          }
        >`
          SELECT d.id, d.flow_id, d.version, d.parameters, d.tags, d.labels, d.work_queue_name, d.work_queue_id,
            d.infrastructure_document_id,
            coalesce((
              SELECT jsonb_agg(jsonb_build_object('id', s.id, 'schedule', s.schedule, 'parameters', s.parameters, 'slug', s.slug,
                'max_scheduled_runs', s.max_scheduled_runs)
                ORDER BY s.updated DESC, s.id)
              FROM deployment_schedule s WHERE s.deployment_id = d.id AND s.active = true), '[]'::jsonb) AS schedules
          FROM deployment d WHERE d.id = ANY(${ids}::uuid[])
          ORDER BY d.id
        `,
        (rows): Array<DeploymentToSchedule> =>
          rows.map((row) => ({
            ...row,
            schedules: row.schedules.map((s) => ({ ...s, schedule: decodeSchedule(s.schedule) }))
          }))
      )

    /**
     * Inserts the runs in the Scheduled state, skipping any whose key the flow already has; the ids
     * of the new ones. One statement for the runs, one for their states.
     */
    const insert = traced("ScheduledRunsRepo.insert")(function* (runs: ReadonlyArray<ScheduledRun>, at: Date) {
      if (runs.length === 0) return [] as Array<string>
      const rows: Array<Record<string, unknown>> = []
      for (const run of runs) {
        rows.push({
          id: yield* newId,
          state_id: yield* newId,
          name: yield* generateName,
          ...run,
          scheduled_time: run.scheduled_time.toISOString()
        })
      }
      const policy = JSON.stringify(defaultFlowRunPolicy)
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const inserted = yield* sql<{ id: string }>`
            INSERT INTO flow_run (
              id, created, updated, name, flow_id, state_id, state_type, state_name, state_timestamp, deployment_id,
              deployment_version, work_queue_id, work_queue_name, parameters, idempotency_key, empirical_policy,
              tags, labels, expected_start_time, next_scheduled_start_time, auto_scheduled,
              infrastructure_document_id, created_by
            )
            SELECT r.id, ${at}, ${at}, r.name, r.flow_id, r.state_id, 'SCHEDULED', 'Scheduled', ${at}, r.deployment_id,
              r.deployment_version, r.work_queue_id, r.work_queue_name, r.parameters, r.idempotency_key, ${policy}::jsonb,
              r.tags, r.labels, r.scheduled_time, r.scheduled_time, r.auto_scheduled,
              r.infrastructure_document_id, r.created_by
            FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(
              id uuid, state_id uuid, name text, flow_id uuid, deployment_id uuid, deployment_version text,
              work_queue_id uuid, work_queue_name text, parameters jsonb, idempotency_key text, tags jsonb,
              labels jsonb, scheduled_time timestamptz, auto_scheduled boolean, infrastructure_document_id uuid,
              created_by jsonb
            )
            ON CONFLICT (flow_id, idempotency_key) DO NOTHING
            RETURNING id
          `
          if (inserted.length === 0) return []
          const ids = inserted.map((r) => r.id)
          yield* sql`
            INSERT INTO flow_run_state (id, created, updated, flow_run_id, type, name, timestamp, message, data, state_details)
            SELECT r.state_id, ${at}, ${at}, r.id, 'SCHEDULED', 'Scheduled', ${at}, 'Flow run scheduled', 'null'::jsonb,
              ${JSON.stringify(encodeDetails(emptyStateDetails))}::jsonb
                || jsonb_build_object('scheduled_time', r.scheduled_time, 'flow_run_id', r.id)
            FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(id uuid, state_id uuid, scheduled_time text)
            WHERE r.id = ANY(${ids}::uuid[])
          `
          return ids
        })
      )
    })

    return sqlErrorsAsDefects({
      idsNeedingRuns,
      idsUpdatedSince,
      readForScheduling,
      // A deployment (or its flow, queue, block) deleted since its schedules were read.
      insert: (runs: ReadonlyArray<ScheduledRun>, at: Date) =>
        insert(runs, at).pipe(Effect.catchIf(isIntegrityViolation, () => new DeploymentConflict()))
    })
  })
}) {}
