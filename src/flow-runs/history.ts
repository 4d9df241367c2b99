/**
 * Flow-run history and the unfiltered count over many runs, from `flow_run_rollup` (migrations 0016
 * and 0017): final runs counted per hour of expected start time and per state, with their run time
 * and lateness summed, kept by triggers in the same transactions as the runs (as changes appended to
 * `flow_run_rollup_delta` and folded into the rollup now and then: the two add up to the counts,
 * and are always read together). A history reads whole hours
 * that fall inside one of its intervals from the rollup, and from the runs themselves: the runs not
 * final yet (their estimates depend on the time of the request; few, behind a partial index) and the
 * final runs of the hours an interval boundary cuts. The answer is the one the plain query over the
 * runs gives (sums are added exactly as numeric, then rounded once).
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { StateType } from "../domain/states.ts"
import type { HistoryWindow } from "../orchestration/repo.ts"

const SLOT_MS = 3_600_000

/**
 * A run the rollup counts. The same condition as migration 0016's triggers and partial index
 * (`… IS NOT TRUE` must read exactly as the index predicate for the planner to use it).
 */
const ROLLED_UP =
  "(flow_run.state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND flow_run.state_name IS NOT NULL AND flow_run.expected_start_time IS NOT NULL)"

/** Body keys that are not filters. */
const NOT_FILTERS = new Set(["sort", "offset", "limit", "page", "history_start", "history_end", "history_interval_seconds"])

const isEmptyFilter = (filter: unknown) =>
  typeof filter === "object" && filter !== null &&
  Object.entries(filter).every(([key, value]) => key === "operator" || value === null || value === undefined)

/** True when the body filters nothing: no related filter, and the flow-run filter (if any) has no criterion. */
export const isUnfiltered = (query: Readonly<Record<string, unknown>>) =>
  Object.entries(query).every(([key, value]) =>
    NOT_FILTERS.has(key) || value === null || value === undefined || (key === "flow_runs" && isEmptyFilter(value))
  )

export interface HistoryRow {
  readonly interval_start: Date
  readonly interval_end: Date
  readonly states: ReadonlyArray<{
    readonly state_type: StateType
    readonly state_name: string
    readonly count_runs: number
    readonly sum_estimated_run_time: number
    readonly sum_estimated_lateness: number
  }>
}

/** The window's buckets, as the plain history computes them: at most 500 from `start`. */
const bucketsOf = (options: HistoryWindow) => {
  const span = (options.end.getTime() - options.start.getTime()) / 1000
  const buckets = Math.max(0, Math.min(500, Math.ceil(span / options.intervalSeconds)))
  const until = new Date(options.start.getTime() + buckets * options.intervalSeconds * 1000)
  return { buckets, until }
}

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Which hours come from the rollup (whole hours inside the window with no interval boundary inside
 * them) and which time ranges from the runs (the hours a boundary cuts). Undefined when the interval
 * is not a whole number of seconds (the plain query is used then).
 */
export const rollupPlan = (options: HistoryWindow) => {
  if (!Number.isInteger(options.intervalSeconds) || options.intervalSeconds < 1) return undefined
  const { buckets, until } = bucketsOf(options)
  const startMs = options.start.getTime()
  const untilMs = until.getTime()
  const intervalMs = options.intervalSeconds * 1000
  if (!Number.isSafeInteger(startMs + buckets * intervalMs)) return undefined
  const cut = new Set<number>()
  for (let i = 0; i <= buckets; i++) {
    const boundary = startMs + i * intervalMs
    const offset = ((boundary % SLOT_MS) + SLOT_MS) % SLOT_MS
    if (offset !== 0) cut.add(boundary - offset)
  }
  const cutSlots = [...cut].sort((a, b) => a - b)
  const ranges: Array<[number, number]> = []
  for (const slot of cutSlots) {
    const from = Math.max(slot, startMs)
    const to = Math.min(slot + SLOT_MS, untilMs)
    if (from >= to) continue
    const last = ranges[ranges.length - 1]
    if (last !== undefined && last[1] === from) last[1] = to
    else ranges.push([from, to])
  }
  return {
    buckets,
    until,
    wholeFrom: iso(Math.ceil(startMs / SLOT_MS) * SLOT_MS),
    wholeTo: iso(Math.floor(untilMs / SLOT_MS) * SLOT_MS),
    cutSlots: cutSlots.map(iso),
    cutFrom: ranges.map(([from]) => iso(from)),
    cutTo: ranges.map(([, to]) => iso(to))
  }
}

/**
 * A run's estimated run time as numeric, as the plain history computes it (total run time, plus the
 * current stretch of a Running run), without converting a double to numeric for the many runs whose
 * run time is 0.
 */
const runTime = (sql: SqlClient, at: Date) =>
  sql`CASE WHEN flow_run.state_type = 'RUNNING' AND flow_run.state_timestamp IS NOT NULL
      THEN GREATEST(0, (flow_run.total_run_time + GREATEST(0, EXTRACT(EPOCH FROM (${at}::timestamptz - flow_run.state_timestamp)))))::numeric
    WHEN flow_run.total_run_time > 0 THEN flow_run.total_run_time::numeric
    ELSE 0 END`

/**
 * A run's estimated lateness in whole microseconds (RunStatesRepo.estimatedLateness, which is never
 * negative): a positive interval's seconds as a double times 10^6, rounded, is its exact number of
 * microseconds, and summing integers is cheaper than summing numeric seconds. The sum over 10^6 is
 * the plain history's numeric sum exactly.
 */
const latenessMicros = (sql: SqlClient, at: Date) =>
  sql`CASE
    WHEN flow_run.start_time IS NOT NULL AND flow_run.start_time > flow_run.expected_start_time
      THEN round(date_part('epoch', flow_run.start_time - flow_run.expected_start_time) * 1000000)::bigint
    WHEN flow_run.start_time IS NULL AND flow_run.expected_start_time < ${at}::timestamptz
      AND (flow_run.state_type IS NULL OR flow_run.state_type NOT IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED'))
      THEN round(date_part('epoch', ${at}::timestamptz - flow_run.expected_start_time) * 1000000)::bigint
    ELSE 0 END`

/** The history of every flow run; undefined when the window is one the rollup cannot serve. */
export const rollupHistory = (sql: SqlClient, options: HistoryWindow, at: Date) =>
  Effect.gen(function* () {
    const plan = rollupPlan(options)
    if (plan === undefined) return undefined
    if (plan.buckets === 0) return [] as Array<HistoryRow>
    // Intervals are whole seconds here: each run's interval found by date_bin, in exact microseconds.
    const stride = sql`make_interval(secs => ${options.intervalSeconds})`
    const bin = (column: string) => sql`date_bin(${stride}, ${sql.unsafe(column)}, ${options.start}::timestamptz)`
    const rows = yield* sql<{
      bucket_start: Date
      state_type: StateType
      state_name: string
      count_runs: string
      sum_estimated_run_time: number
      sum_estimated_lateness: number
    }>`
      SELECT bucket_start, state_type, state_name, sum(count_runs) AS count_runs,
        sum(run_time)::float8 AS sum_estimated_run_time, (sum(lateness) / 1000000)::float8 AS sum_estimated_lateness
      FROM (
        SELECT ${bin("rollup.slot")} AS bucket_start, state_type, state_name, count_runs,
          sum_run_time AS run_time, sum_lateness * 1000000 AS lateness
        FROM (
          SELECT * FROM flow_run_rollup
          UNION ALL
          SELECT * FROM flow_run_rollup_delta
        ) rollup
        WHERE slot >= ${plan.wholeFrom}::timestamptz AND slot < ${plan.wholeTo}::timestamptz
          AND slot <> ALL(${plan.cutSlots}::timestamptz[])
        UNION ALL
        SELECT ${bin("flow_run.expected_start_time")}, flow_run.state_type, flow_run.state_name, 1,
          ${runTime(sql, at)}, ${latenessMicros(sql, at)}
        FROM flow_run
        WHERE flow_run.expected_start_time >= ${options.start} AND flow_run.expected_start_time < ${plan.until}
          AND flow_run.state_type IS NOT NULL AND ${sql.unsafe(ROLLED_UP)} IS NOT TRUE
        UNION ALL
        SELECT ${bin("flow_run.expected_start_time")}, flow_run.state_type, flow_run.state_name, 1,
          ${runTime(sql, at)}, ${latenessMicros(sql, at)}
        FROM unnest(${plan.cutFrom}::timestamptz[], ${plan.cutTo}::timestamptz[]) AS cut (lo, hi)
          JOIN flow_run ON flow_run.expected_start_time >= cut.lo AND flow_run.expected_start_time < cut.hi
        WHERE ${sql.unsafe(ROLLED_UP)}
      ) parts
      GROUP BY 1, 2, 3
      HAVING sum(count_runs) > 0
      ORDER BY 1, 2, 3
    `
    const startMs = options.start.getTime()
    const intervalMs = options.intervalSeconds * 1000
    const byBucket = new Map<number, Array<HistoryRow["states"][number]>>()
    for (const r of rows) {
      const i = Math.round((new Date(r.bucket_start).getTime() - startMs) / intervalMs)
      const states = byBucket.get(i) ?? []
      states.push({
        state_type: r.state_type,
        state_name: r.state_name,
        count_runs: Number(r.count_runs),
        sum_estimated_run_time: r.sum_estimated_run_time,
        sum_estimated_lateness: r.sum_estimated_lateness
      })
      byBucket.set(i, states)
    }
    return Array.from({ length: plan.buckets }, (_, i): HistoryRow => ({
      interval_start: new Date(options.start.getTime() + i * options.intervalSeconds * 1000),
      interval_end: new Date(options.start.getTime() + (i + 1) * options.intervalSeconds * 1000),
      states: byBucket.get(i) ?? []
    }))
  })

/** How many flow runs there are: the rollup's final runs and the others. */
export const countAll = (sql: SqlClient) =>
  Effect.map(
    sql<{ count: string }>`
      SELECT (SELECT coalesce(sum(count_runs), 0) FROM flow_run_rollup)
        + (SELECT coalesce(sum(count_runs), 0) FROM flow_run_rollup_delta)
        + (SELECT count(*) FROM flow_run WHERE ${sql.unsafe(ROLLED_UP)} IS NOT TRUE) AS count
    `,
    (rows) => Number(rows[0]!.count)
  )
