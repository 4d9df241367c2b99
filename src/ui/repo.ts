/** The UI's summaries in SQL: each answer one query, over the filters every area compiles the same way. */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { sqlErrorsAsDefects } from "../database/errors.ts"
import { AsGiven, type SortedPage } from "../database/rows.ts"
import { queryCondition, type RelatedFilters } from "../queries/query.ts"
import { StateType } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { flowRunOrder, flowRunPage, type FlowRunQuery } from "../flow-runs/page.ts"
import type { FlowRunSort } from "../flow-runs/schemas.ts"
import { estimates } from "../orchestration/global-policy.ts"
import { type CountByState, type SimpleFlowRun, SimpleNextFlowRun } from "./schemas.ts"

const FlowCountRow = Schema.Struct({ flow_id: Schema.String, count: Schema.NumberFromString })

/** A flow's next run: its wire record, decoded (its timestamp a Date). */
const NextRunRow = Schema.typeSchema(SimpleNextFlowRun)

/** What a chart needs of a flow run, to estimate its duration and lateness. */
const ChartRunRow = Schema.Struct({
  id: Schema.String,
  state_type: StateType,
  state_timestamp: Schema.NullOr(Schema.DateFromSelf),
  start_time: Schema.NullOr(Schema.DateFromSelf),
  expected_start_time: Schema.NullOr(Schema.DateFromSelf),
  total_run_time: Schema.Number
})

const FlowRunCountRow = Schema.Struct({ flow_run_id: Schema.String, count: Schema.NumberFromString })

const BucketCountRow = Schema.Struct({
  bucket: Schema.NumberFromString,
  failed: Schema.NumberFromString,
  completed: Schema.NumberFromString
})

const StateCountRow = Schema.Struct({ state_type: StateType, count: Schema.NumberFromString })

/** Counted as failed on the dashboard; the other final states as completed. */
const FAILED_STATES: ReadonlyArray<StateType> = ["FAILED", "CRASHED"]
export const TERMINAL_STATES: ReadonlyArray<StateType> = ["COMPLETED", "FAILED", "CANCELLED", "CRASHED"]

const noCounts = (): { -readonly [K in keyof CountByState]: number } => ({
  COMPLETED: 0,
  PENDING: 0,
  RUNNING: 0,
  FAILED: 0,
  CANCELLED: 0,
  CRASHED: 0,
  PAUSED: 0,
  CANCELLING: 0,
  SCHEDULED: 0
})

/** Time buckets of a dashboard count: bucket i holds start times from `startUs + i × widthUs` on. */
export interface Buckets {
  readonly count: number
  /** Microseconds since the epoch. */
  readonly startUs: bigint
  readonly widthUs: bigint
}

export class UiRepo extends Effect.Service<UiRepo>()("baton/UiRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const deploymentCounts = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: FlowCountRow,
      execute: (flowIds) =>
        sql`SELECT flow_id, count(*) AS count FROM deployment WHERE flow_id = ANY(${flowIds}::uuid[]) GROUP BY flow_id`
    })

    /** Deployments per flow. */
    const deploymentsPerFlow = (flowIds: ReadonlyArray<string>) =>
      Effect.map(deploymentCounts(flowIds), (rows) => new Map(rows.map((r) => [r.flow_id, r.count])))

    const nextRuns = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: NextRunRow,
      execute: (flowIds) =>
        sql`
          SELECT run.id, run.flow_id, run.name, run.state_name, run.state_type, run.next_scheduled_start_time
          FROM (SELECT DISTINCT unnest(${flowIds}::uuid[]) AS flow_id) flows
          CROSS JOIN LATERAL (
            SELECT flow_run.* FROM flow_run
            WHERE flow_run.flow_id = flows.flow_id AND flow_run.state_type = 'SCHEDULED'
              AND flow_run.next_scheduled_start_time IS NOT NULL
            ORDER BY flow_run.next_scheduled_start_time ASC, flow_run.id
            LIMIT 1
          ) run
        `
    })

    /**
     * Each flow's Scheduled run due first (by next scheduled start time, then id), for the flows
     * that have one.
     */
    const nextRunPerFlow = (flowIds: ReadonlyArray<string>) =>
      Effect.map(nextRuns(flowIds), (rows) => new Map(rows.map((r) => [r.flow_id, r])))

    const chartRuns = SqlSchema.findAll({
      Request: AsGiven<FlowRunQuery & SortedPage<FlowRunSort>>(),
      Result: ChartRunRow,
      execute: (query) =>
        sql`
          SELECT flow_run.id, flow_run.state_type, flow_run.state_timestamp, flow_run.start_time,
            flow_run.expected_start_time, flow_run.total_run_time
          FROM (${flowRunPage(sql, query)}) flow_run
          ORDER BY ${flowRunOrder(sql, query.sort)}
        `
    })

    /** A page of flow runs, as much of each as a chart needs. */
    const simpleFlowRuns = (query: FlowRunQuery & SortedPage<FlowRunSort>) =>
      Effect.gen(function* () {
        const rows = yield* chartRuns(query)
        const at = yield* now
        return rows.map((row): SimpleFlowRun => {
          const { estimated_run_time, estimated_start_time_delta } = estimates(row, at)
          return {
            id: row.id,
            state_type: row.state_type,
            timestamp: (row.start_time ?? row.expected_start_time)!,
            duration: estimated_run_time,
            lateness: estimated_start_time_delta
          }
        })
      })

    const taskRunCounts = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: FlowRunCountRow,
      execute: (flowRunIds) =>
        sql`
          SELECT task_run.flow_run_id, count(*) AS count FROM task_run
          WHERE task_run.flow_run_id = ANY(${flowRunIds}::uuid[])
            AND NOT EXISTS (SELECT 1 FROM flow_run WHERE flow_run.parent_task_run_id = task_run.id)
          GROUP BY task_run.flow_run_id
        `
    })

    /** Task runs per flow run, leaving out those that stand for a subflow run. */
    const taskRunsPerFlowRun = (flowRunIds: ReadonlyArray<string>) =>
      Effect.map(taskRunCounts(flowRunIds), (rows) => new Map(rows.map((r) => [r.flow_run_id, r.count])))

    const bucketCounts = SqlSchema.findAll({
      Request: AsGiven<{ readonly query: RelatedFilters; readonly buckets: Buckets }>(),
      Result: BucketCountRow,
      execute: ({ buckets, query }) =>
        // Exact to the microsecond: the bucket of a start time is floor((start − first) / width).
        sql`
          SELECT bucket, count(*) FILTER (WHERE failed) AS failed, count(*) FILTER (WHERE NOT failed) AS completed
          FROM (
            SELECT floor(
                (extract(epoch FROM task_run.start_time)::numeric * 1000000 - ${String(buckets.startUs)}::numeric)
                / ${String(buckets.widthUs)}::numeric
              )::bigint AS bucket,
              task_run.state_type = ANY(${FAILED_STATES}::text[]) AS failed
            FROM task_run WHERE ${queryCondition(sql, "task_run", query)}
          ) runs
          WHERE bucket >= 0 AND bucket < ${buckets.count}
          GROUP BY bucket
        `
    })

    /**
     * The matching task runs in a final state counted per bucket of start time, failed (Failed,
     * Crashed) and completed (the others) apart; runs outside the buckets are left out.
     */
    const taskRunCountsPerBucket = (query: RelatedFilters, buckets: Buckets) =>
      Effect.map(bucketCounts({ query, buckets }), (rows) => {
        const counts = Array.from({ length: buckets.count }, () => ({ completed: 0, failed: 0 }))
        for (const row of rows) counts[row.bucket] = { completed: row.completed, failed: row.failed }
        return counts
      })

    const stateCounts = SqlSchema.findAll({
      Request: AsGiven<RelatedFilters>(),
      Result: StateCountRow,
      execute: (query) =>
        sql`
          SELECT task_run.state_type, count(*) AS count FROM task_run
          WHERE task_run.state_type IS NOT NULL AND ${queryCondition(sql, "task_run", query)}
          GROUP BY task_run.state_type
        `
    })

    /** The matching task runs counted per state type, every type present. */
    const taskRunCountsByState = (query: RelatedFilters) =>
      Effect.map(stateCounts(query), (rows) => {
        const counts = noCounts()
        for (const row of rows) counts[row.state_type] = row.count
        return counts as CountByState
      })

    return sqlErrorsAsDefects({
      deploymentsPerFlow,
      nextRunPerFlow,
      simpleFlowRuns,
      taskRunsPerFlowRun,
      taskRunCountsPerBucket,
      taskRunCountsByState
    })
  })
}) {}
