/**
 * Flow-run history and counts over many runs, from `flow_run_rollup` (migrations 0016 to 0018 and
 * 0026): runs counted per quarter hour of expected start time (a "slot") and per state, kept by
 * triggers in the same transactions as the runs (as changes appended to `flow_run_rollup_delta` and
 * folded into the rollup now and then: the two add up to the counts, and are always read together).
 * A final run's run time and lateness are summed; a run not final yet has estimates that move with
 * the time of the request, linearly, so its row keeps the counts and sums they follow from (see
 * migration 0026) and they are worked out for the time of the request. `flow_run_rollup_hour`
 * (migration 0029) holds the same per hour, folded from the same deltas (which stay per quarter
 * hour): a whole hour is read from its rows and the deltas of its four slots, a quarter as many rows
 * as its slots'. `flow_run_rollup_deployment` (migration 0027) holds the quarter hours per
 * deployment, and the deltas say whose they are: a body filtered by deployment ids reads those
 * deployments' rows and deltas instead (per quarter hour only: there are no hours per deployment),
 * and their runs where runs are read one by one; everything else is the same.
 *
 * It serves the bodies whose only filter is on the runs' expected start time (after_, before_),
 * state (type and name any_) and deployment (the run's deployment_id any_, or the `deployments`
 * filter's id any_), or none. Whole slots inside the window (and inside one interval of a
 * history) come from the rollup: whole hours from the hour table (no boundary inside them, none of
 * their slots cut, and for a history not the hour holding the time of the request), the other whole
 * slots from the quarter-hour table. Read from the runs one by one: the runs of the slots a boundary
 * cuts (an interval's, or the filter's); for a history, the unfinished runs of the slot holding the
 * time of the request (some of its runs are late by then, some not yet) and of a rollup row whose
 * Running runs may have started after it (a state timestamp ahead of this server's clock; for an
 * hour's row, the hour's Running runs of that state); and the runs the rollup cannot hold (no state
 * type, name or expected start time: none that Baton writes).
 * A count thus reads no unfinished run one by one, however many there are; a history a few slots'.
 *
 * The answer is the one the plain query over the runs gives: the rollup's sums are exact (numeric,
 * the times in epoch seconds to the microsecond), lateness is added in whole microseconds, and run
 * times are added exactly and rounded once (the plain query adds every run time as a double, so its
 * last binary digit may differ).
 */
import type { RelatedFilters } from "../queries/query.ts"
import type { Statement } from "@effect/sql"
import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { StateType } from "../domain/states.ts"
import { LATEST } from "../domain/time.ts"
import { historyBuckets, type HistoryWindow } from "../orchestration/history.ts"
import { ROLLUP_COLUMNS } from "../database/migrations/0026_flow_run_rollup_live.ts"
import { DEPLOYMENT_ROLLUP_COLUMNS } from "../database/migrations/0027_flow_run_rollup_deployments.ts"
import { hourOf as hourOfSql } from "../database/migrations/0029_flow_run_rollup_hours.ts"

/** The rollup's slot: flow_run_rollup_slot (migration 0018). */
const SLOT_MS = 900_000
/** The hour table's slot (migration 0029): its hours start on whole UTC hours, as hourOf there. */
const HOUR_MS = 3_600_000

const FINAL_TYPES = "('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED')"

/**
 * A final run. The same condition as migration 0016's partial index (`… IS NOT TRUE` must read
 * exactly as the index predicate for the planner to use it).
 */
const ROLLED_UP =
  "(flow_run.state_type IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED') AND flow_run.state_name IS NOT NULL AND flow_run.expected_start_time IS NOT NULL)"

/** A run in the rollup not final yet (through migration 0016's partial index of the runs not final). */
const LIVE = `${ROLLED_UP} IS NOT TRUE AND flow_run.state_type IS NOT NULL AND flow_run.state_name IS NOT NULL`

/** A rollup row's columns (without a deployment's), as `rollup`'s (see `sources`). */
const ROLLUP_ROW_COLUMNS = ROLLUP_COLUMNS.split(", ").map((column) => `rollup.${column}`).join(", ")

/** A run in the rollup, final or not (migration 0026). */
const IN_ROLLUP = "flow_run.state_type IS NOT NULL AND flow_run.state_name IS NOT NULL AND flow_run.expected_start_time IS NOT NULL"

/** A run the rollup cannot hold: exactly migration 0026's partial index predicate. */
const ODD = "(flow_run.state_type IS NULL OR flow_run.state_name IS NULL OR flow_run.expected_start_time IS NULL)"

/** Body keys that are not filters. */
const NOT_FILTERS = new Set(["sort", "offset", "limit", "page", "history_start", "history_end", "history_interval_seconds"])

/** What a body may filter on for the rollup to answer it: all optional, all ANDed. */
export interface RollupFilter {
  readonly after?: Date
  readonly before?: Date
  readonly types?: ReadonlyArray<string>
  readonly names?: ReadonlyArray<string>
  /** Runs of these deployments only (the run's deployment_id any_, the `deployments` filter's id any_, or those in both). */
  readonly deployments?: ReadonlyArray<string>
  /** Only those of `deployments` that exist: the `deployments` filter matches a run through its deployment's row. */
  readonly existingDeployments?: boolean
}

type Criteria = Readonly<Record<string, unknown>>

const present = (criteria: Criteria) =>
  Object.entries(criteria).filter(([key, value]) => key !== "operator" && value !== null && value !== undefined)

/** A criterion's any_ (undefined for none), or false when it has anything else (not_any_, is_null_ …). */
const anyOnly = (criterion: unknown): ReadonlyArray<string> | undefined | false => {
  const c = criterion as Criteria
  if (present(c).some(([k]) => k !== "any_")) return false
  return (c.any_ ?? undefined) as ReadonlyArray<string> | undefined
}

/** The ids in both lists (UUIDs in any case). */
const within = (ids: ReadonlyArray<string> | undefined, more: ReadonlyArray<string>) => {
  if (ids === undefined) return more
  const kept = new Set(more.map((id) => id.toLowerCase()))
  return ids.filter((id) => kept.has(id.toLowerCase()))
}

/**
 * The body's filter as a RollupFilter, or undefined when it filters on anything else: a related
 * object (but deployments by id), another field of the run, not_any_, or or_ between two criteria.
 */
export const rollupFilter = (query: RelatedFilters): RollupFilter | undefined => {
  let filter: { -readonly [K in keyof RollupFilter]: RollupFilter[K] } = {}
  for (const [key, value] of Object.entries(query)) {
    if (NOT_FILTERS.has(key) || value === null || value === undefined) continue
    if (key === "deployments") {
      // Only `{ id: { any_ } }`: any other criterion, or none (`{}` asks for a deployment to exist), is not ids.
      const criteria = present(value as Criteria)
      if (criteria.length !== 1 || criteria[0]![0] !== "id") return undefined
      const ids = anyOnly(criteria[0]![1])
      if (ids === false || ids === undefined) return undefined
      filter = { ...filter, deployments: within(filter.deployments, ids), existingDeployments: true }
      continue
    }
    if (key !== "flow_runs") return undefined
    const runs = value as Criteria
    const criteria = present(runs)
    if (criteria.length > 1 && runs.operator === "or_") return undefined
    for (const [field, criterion] of criteria) {
      const c = criterion as Criteria
      if (field === "expected_start_time") {
        if (present(c).some(([k]) => k !== "after_" && k !== "before_")) return undefined
        if (c.after_ != null) filter = { ...filter, after: c.after_ as Date }
        if (c.before_ != null) filter = { ...filter, before: c.before_ as Date }
      } else if (field === "deployment_id") {
        const ids = anyOnly(criterion)
        if (ids === false) return undefined
        if (ids !== undefined) filter = { ...filter, deployments: within(filter.deployments, ids) }
      } else if (field === "state") {
        const parts = present(c)
        if (parts.length > 1 && c.operator === "or_") return undefined
        for (const [part, values] of parts) {
          if (part !== "type" && part !== "name") return undefined
          const v = values as Criteria
          if (present(v).some(([k]) => k !== "any_")) return undefined
          if (v.any_ == null) continue
          filter = part === "type"
            ? { ...filter, types: v.any_ as ReadonlyArray<string> }
            : { ...filter, names: v.any_ as ReadonlyArray<string> }
        }
      } else {
        return undefined
      }
    }
  }
  return filter
}

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

const iso = (ms: number) => new Date(ms).toISOString()
/** A time as PostgreSQL reads it, ±infinity for a range open at that end. */
const timeOrInfinity = (ms: number) => (ms === -Infinity ? "-infinity" : ms === Infinity ? "infinity" : iso(ms))
const slotOf = (ms: number) => ms - (((ms % SLOT_MS) + SLOT_MS) % SLOT_MS)
const hourOf = (ms: number) => ms - (((ms % HOUR_MS) + HOUR_MS) % HOUR_MS)
/** A time in whole microseconds as an ISO 8601 string PostgreSQL reads to the microsecond. */
const isoMicros = (us: number) => {
  const micros = ((us % 1000) + 1000) % 1000
  return `${iso((us - micros) / 1000).slice(0, -1)}${String(micros).padStart(3, "0")}Z`
}

/**
 * Which slots come from the rollup and which time ranges from the runs. The rows wanted are those
 * with `start` <= expected start time < `until` (either open) and inside the filter's after_ and
 * before_ (both inclusive); `boundaries` cut the window into intervals. Slots with a boundary or the
 * filter's after_ strictly inside, and the slot holding before_, are cut; whole slots inside
 * everything come from the rollup.
 *
 * A cut slot falls into pieces (at its boundaries and the window's ends), each inside one interval or
 * outside the window. For a count, and for a history where nothing is gained, the runs of the pieces
 * inside are read (`cutFrom`, `cutTo`: ranges already cut to the window and the filter, to the
 * microsecond). For a history, when the slot's largest piece inside is longer than the rest of the
 * slot (in the slot holding the time of the request, counting only their time up to then: the runs
 * a busy server just made are all before it), that piece is the slot's rollup row less the runs of
 * the rest: only the rest is read
 * (`pieceFrom`, `pieceTo`, with `pieceInside` for a piece that also counts in its own interval and
 * `pieceLess` the time in the largest piece whose interval it is taken from), and the slot's rollup row
 * counts at that time (`derivedSlots`, `derivedAt`). Its runs' numbers are final: taking them from the
 * rollup's exact sums leaves exact sums.
 *
 * The whole slots, [`wholeFrom`, `wholeTo`) less `cutSlots` (±infinity for open ends), are whole
 * hours and whole quarter hours. With `hours`, the hours in [`hourFrom`, `hourTo`) but `brokenHours`
 * are whole (read from `flow_run_rollup_hour`): all four of their slots are whole, no boundary is
 * strictly inside them (one on a quarter hour cuts no slot but puts its hour in two intervals) and
 * none holds `now`; the other whole slots are listed (`quarterSlots`: a few per boundary). Without,
 * every whole slot is a quarter hour. Quarter hours are read from the quarter-hour table.
 */
export const rollupPlan = (options: {
  readonly start?: number
  readonly until?: number
  readonly boundaries: ReadonlyArray<number>
  readonly filter: RollupFilter
  /** The time of the request (a history's): the unfinished runs of its slot are read one by one. */
  readonly now?: number
  /** Whether whole hours may come from `flow_run_rollup_hour` (there is none per deployment). */
  readonly hours: boolean
}) => {
  const after = options.filter.after?.getTime()
  const before = options.filter.before?.getTime()
  const cut = new Set<number>()
  for (const boundary of options.boundaries) if (slotOf(boundary) !== boundary) cut.add(slotOf(boundary))
  if (after !== undefined && slotOf(after) !== after) cut.add(slotOf(after))
  if (before !== undefined) cut.add(slotOf(before))
  const low = Math.max(options.start ?? -Infinity, after ?? -Infinity)
  // In microseconds: before_ is inclusive.
  const high = Math.min((options.until ?? Infinity) * 1000, before !== undefined ? before * 1000 + 1 : Infinity)
  const cutSlots = [...cut].sort((a, b) => a - b)
  const nowMicros = options.now === undefined ? undefined : options.now * 1000
  const pieces: Array<{ from: number; to: number; inside: boolean; less: number | undefined }> = []
  const derived: Array<{ slot: number; at: number }> = []
  /** Adds a piece to read, one range with the last when they meet and count alike. */
  const read = (piece: { from: number; to: number; inside: boolean }, less: number | undefined) => {
    const last = pieces[pieces.length - 1]
    if (last !== undefined && last.to === piece.from && last.inside === piece.inside && last.less === less) last.to = piece.to
    else pieces.push({ from: piece.from, to: piece.to, inside: piece.inside, less })
  }
  for (const slot of cutSlots) {
    const slotFrom = slot * 1000
    const slotTo = (slot + SLOT_MS) * 1000
    // The slot's pieces: split at each boundary and window end strictly inside it.
    const points = new Set([slotFrom, slotTo])
    for (const point of [...options.boundaries.map((b) => b * 1000), low * 1000, high]) {
      if (point > slotFrom && point < slotTo) points.add(point)
    }
    const sorted = [...points].sort((a, b) => a - b)
    const split = sorted.slice(1).map((to, i) => ({ from: sorted[i]!, to, inside: sorted[i]! >= low * 1000 && to <= high }))
    const wanted = split.filter((piece) => piece.inside)
    // How many runs a piece holds, as its time: in the slot holding the time of the request, its
    // time up to then (runs are made expected to start at once, or scheduled a little ahead: a
    // server that made thousands in the last minutes has them all before the time of the request).
    const weight = nowMicros !== undefined && slotFrom < nowMicros && nowMicros < slotTo
      ? (piece: { from: number; to: number }) => Math.max(0, Math.min(piece.to, nowMicros) - piece.from)
      : (piece: { from: number; to: number }) => piece.to - piece.from
    const largest = wanted.reduce<(typeof split)[number] | undefined>(
      (best, piece) => (best === undefined || weight(piece) > weight(best) ? piece : best),
      undefined
    )
    const wantedWeight = wanted.reduce((sum, piece) => sum + weight(piece), 0)
    const slotWeight = weight({ from: slotFrom, to: slotTo })
    // Derived from a piece that has a millisecond of its own to count the slot's row at.
    if (largest !== undefined && Math.ceil(largest.from / 1000) * 1000 < largest.to && slotWeight - weight(largest) < wantedWeight) {
      // In milliseconds: the largest piece's start, or the first millisecond inside it.
      const at = Math.ceil(largest.from / 1000)
      derived.push({ slot, at })
      for (const piece of split) if (piece !== largest) read(piece, at)
    } else {
      for (const piece of wanted) read(piece, undefined)
    }
  }
  // Count: every piece inside from the runs (merged).
  const countRanges: Array<[number, number]> = []
  for (const slot of cutSlots) {
    const from = Math.max(slot, low) * 1000
    const to = Math.min((slot + SLOT_MS) * 1000, high)
    if (from >= to) continue
    const last = countRanges[countRanges.length - 1]
    if (last !== undefined && last[1] === from) last[1] = to
    else countRanges.push([from, to])
  }
  // A history's unfinished runs of the cut slots and of the slot holding the time of the request,
  // in pieces inside the window, each inside one interval.
  const livePieces: Array<[number, number]> = []
  const liveSlots = new Set(cutSlots)
  if (options.now !== undefined) liveSlots.add(slotOf(options.now))
  for (const slot of [...liveSlots].sort((a, b) => a - b)) {
    const from = Math.max(slot, low) * 1000
    const to = Math.min((slot + SLOT_MS) * 1000, high)
    if (from >= to) continue
    const points = [from, ...options.boundaries.map((b) => b * 1000).filter((point) => point > from && point < to), to]
    points.sort((a, b) => a - b)
    for (let i = 1; i < points.length; i++) livePieces.push([points[i - 1]!, points[i]!])
  }
  const wholeFrom = low === -Infinity ? -Infinity : Math.ceil(low / SLOT_MS) * SLOT_MS
  const wholeTo = Math.min(
    options.until !== undefined ? slotOf(options.until) : Infinity,
    before !== undefined ? slotOf(before) : Infinity
  )
  // The whole slots, [wholeFrom, wholeTo) less the cut ones: whole hours (from the hour table), the
  // hours in [hourFrom, hourTo) less the broken ones, and quarter hours (from the quarter-hour table),
  // the rest. An hour is whole when it is inside [wholeFrom, wholeTo), none of its slots is cut, no
  // boundary is strictly inside it (it is inside one interval) and it does not hold the time of the
  // request (whose slot's unfinished runs are read one by one; the hour's other rows are then wholly
  // before or wholly after it).
  let hourFrom = wholeFrom === -Infinity ? -Infinity : Math.ceil(wholeFrom / HOUR_MS) * HOUR_MS
  let hourTo = wholeTo === Infinity ? Infinity : hourOf(wholeTo)
  const broken = new Set<number>()
  if (options.hours && hourFrom < hourTo) {
    for (const slot of cutSlots) broken.add(hourOf(slot))
    for (const boundary of options.boundaries) if (hourOf(boundary) !== boundary) broken.add(hourOf(boundary))
    if (options.now !== undefined) broken.add(hourOf(options.now))
    for (const hour of broken) if (hour < hourFrom || hour >= hourTo) broken.delete(hour)
    // Broken hours at the ends narrow the range of hours instead.
    while (broken.has(hourFrom)) {
      broken.delete(hourFrom)
      hourFrom += HOUR_MS
    }
    while (broken.has(hourTo - HOUR_MS)) {
      hourTo -= HOUR_MS
      broken.delete(hourTo)
    }
  }
  const hours = options.hours && hourFrom < hourTo
  const brokenHours = [...broken].sort((a, b) => a - b)
  // With whole hours, the other whole slots one by one (finite: the hours reach any open end).
  const quarterSlots: Array<number> = []
  if (hours) {
    const uncut = (from: number, to: number) => {
      for (let slot = from; slot < to; slot += SLOT_MS) if (!cut.has(slot)) quarterSlots.push(slot)
    }
    uncut(wholeFrom, hourFrom)
    for (const hour of brokenHours) uncut(hour, hour + HOUR_MS)
    uncut(hourTo, wholeTo)
  }
  return {
    wholeFrom: timeOrInfinity(wholeFrom),
    wholeTo: timeOrInfinity(wholeTo),
    hours,
    hourFrom: timeOrInfinity(hourFrom),
    hourTo: timeOrInfinity(hourTo),
    brokenHours: brokenHours.map(iso),
    quarterSlots: quarterSlots.map(iso),
    cutSlots: cutSlots.map(iso),
    cutFrom: countRanges.map(([from]) => isoMicros(from)),
    cutTo: countRanges.map(([, to]) => isoMicros(to)),
    pieceFrom: pieces.map((piece) => isoMicros(piece.from)),
    pieceTo: pieces.map((piece) => isoMicros(piece.to)),
    pieceInside: pieces.map((piece) => piece.inside),
    pieceLess: pieces.map((piece) => (piece.less === undefined ? null : iso(piece.less))),
    derivedSlots: derived.map((d) => iso(d.slot)),
    derivedAt: derived.map((d) => iso(d.at)),
    livePieceFrom: livePieces.map(([from]) => isoMicros(from)),
    livePieceTo: livePieces.map(([, to]) => isoMicros(to)),
    nowSlot: options.now === undefined ? undefined : iso(slotOf(options.now))
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

type Fragment = Statement.Fragment

const all = (sql: SqlClient, conditions: ReadonlyArray<Fragment>) => (conditions.length === 0 ? sql`TRUE` : sql.and(conditions))

/**
 * The filter's conditions on `table`'s state_type, state_name and deployment_id (a run, or a rollup
 * row per deployment). The deployments that must exist are also given as a list, for the planner's
 * estimates and the indexes.
 */
const keyConditions = (sql: SqlClient, filter: RollupFilter, table: string): Array<Fragment> => [
  ...(filter.types !== undefined ? [sql`${sql.unsafe(table)}.state_type = ANY(${filter.types}::text[])`] : []),
  ...(filter.names !== undefined ? [sql`${sql.unsafe(table)}.state_name = ANY(${filter.names}::text[])`] : []),
  ...(filter.deployments !== undefined ? [sql`${sql.unsafe(table)}.deployment_id = ANY(${filter.deployments}::uuid[])`] : []),
  ...(filter.deployments !== undefined && filter.existingDeployments === true
    ? [sql`${sql.unsafe(table)}.deployment_id = ANY(ARRAY(SELECT deployment.id FROM deployment WHERE deployment.id = ANY(${filter.deployments}::uuid[])))`]
    : [])
]

/** The filter's conditions on a run (its expected start time, state and deployment), as the plain query has them. */
const runConditions = (sql: SqlClient, filter: RollupFilter): Array<Fragment> => [
  ...(filter.after !== undefined ? [sql`flow_run.expected_start_time >= ${filter.after}`] : []),
  ...(filter.before !== undefined ? [sql`flow_run.expected_start_time <= ${filter.before}`] : []),
  ...keyConditions(sql, filter, "flow_run")
]

/**
 * The time of the request in epoch seconds, exactly (milliseconds), as numeric: the unfinished runs'
 * estimates are linear in it (migration 0026).
 */
const epochSeconds = (at: Date) => {
  const ms = at.getTime()
  const whole = Math.floor(ms / 1000)
  return `${whole}.${String(ms - whole * 1000).padStart(3, "0")}`
}

/**
 * The three sources of a rollup answer: the rollup's whole slots (final runs, and unfinished ones
 * whose estimates follow from the time of the request), the runs read one by one (the cut slots',
 * the unfinished runs of the slot holding the time of the request, of a rollup row whose Running runs
 * may have started after it, and the few runs the rollup cannot hold). A history asks for their rows
 * per bucket and state; a count only for the rollup's counts and `count(*)` of the others.
 */
const sources = (
  sql: SqlClient,
  plan: ReturnType<typeof rollupPlan>,
  window: { readonly start?: Date; readonly until?: Date; readonly history: boolean },
  filter: RollupFilter,
  at: Date
) => {
  const windowConditions = [
    ...(window.start !== undefined ? [sql`flow_run.expected_start_time >= ${window.start}`] : []),
    ...(window.until !== undefined ? [sql`flow_run.expected_start_time < ${window.until}`] : []),
    // A history counts runs with a state; a count every run.
    ...(window.history ? [sql`flow_run.state_type IS NOT NULL`] : [])
  ]
  // The rollup's rows: all of them, or with deployment ids, per deployment (the deltas hold both;
  // keyConditions picks the deployments' rows and deltas, in both branches).
  const perDeployment = filter.deployments !== undefined
  const table = sql.unsafe(perDeployment ? "flow_run_rollup_deployment" : "flow_run_rollup")
  const columns = sql.unsafe(perDeployment ? DEPLOYMENT_ROLLUP_COLUMNS : ROLLUP_COLUMNS)
  const ROLLUP_ROWS = sql`(SELECT ${columns} FROM ${table} UNION ALL SELECT ${columns} FROM flow_run_rollup_delta) rollup`
  const keys = all(sql, keyConditions(sql, filter, "rollup"))
  /** Rows of the hour table inside the plan's whole hours (plain bounds on its key, for its index). */
  const hourRows = sql`rollup.slot >= ${plan.hourFrom}::timestamptz AND rollup.slot < ${plan.hourTo}::timestamptz
    AND rollup.slot <> ALL(${plan.brokenHours}::timestamptz[]) AND ${keys}`
  const notCut = sql`rollup.slot <> ALL(${plan.cutSlots}::timestamptz[])`
  /** A slot inside the whole slots of the plan (in a whole hour or not). */
  const inWhole = sql`rollup.slot >= ${plan.wholeFrom}::timestamptz AND rollup.slot < ${plan.wholeTo}::timestamptz AND ${notCut}`
  /** A slot (or an hour's start) inside one of the plan's whole hours. */
  const inHours = plan.hours
    ? sql`(rollup.slot >= ${plan.hourFrom}::timestamptz AND rollup.slot < ${plan.hourTo}::timestamptz
        AND ${sql.unsafe(hourOfSql("rollup.slot"))} <> ALL(${plan.brokenHours}::timestamptz[]))`
    : sql`FALSE`
  /** A unit's start: a quarter hour's, or in a whole hour the hour's (for a delta, or any row). */
  const unitSlot = plan.hours ? sql`CASE WHEN ${inHours} THEN ${sql.unsafe(hourOfSql("rollup.slot"))} ELSE rollup.slot END` : sql`rollup.slot`
  /**
   * Where the rollup's rows of the whole slots are (each read as `rollup`): whole hours' rows in the
   * hour table (a range of its index, the broken hours left out), whole quarter hours' in the
   * quarter-hour table (or the deployments': the slots listed, or without hours the range less the
   * cut slots), and the deltas of all their slots (per quarter hour; `unit` gives a delta in a whole
   * hour the hour's slot). Every bound is a constant, for the planner's estimates (ranges joined
   * laterally made it expect a hundred thousand rows, and sort them); each is read and summed apart
   * (a union of the three is a subquery scan per row).
   */
  const parts: ReadonlyArray<{ readonly from: Fragment; readonly where: Fragment; readonly unit: Fragment }> = [
    ...(plan.hours
      ? [{
        from: sql`flow_run_rollup_hour rollup`,
        where: hourRows,
        unit: sql`rollup.slot`
      }, {
        from: sql`${table} rollup`,
        where: sql`rollup.slot = ANY(${plan.quarterSlots}::timestamptz[]) AND ${keys}`,
        unit: sql`rollup.slot`
      }]
      : [{ from: sql`${table} rollup`, where: sql`${inWhole} AND ${keys}`, unit: sql`rollup.slot` }]),
    { from: sql`flow_run_rollup_delta rollup`, where: sql`${inWhole} AND ${keys}`, unit: unitSlot }
  ]
  /** The runs the rollup cannot hold, as the plain query picks them. */
  const odd = (select: Fragment, group: Fragment = sql``) => sql`
    SELECT ${select} FROM flow_run
    WHERE ${all(sql, [...windowConditions, ...runConditions(sql, filter)])} AND ${sql.unsafe(ODD)}
    ${group}
  `
  const edges = (select: Fragment) => sql`
    SELECT edge.* FROM unnest(${plan.cutFrom}::timestamptz[], ${plan.cutTo}::timestamptz[]) AS cut (lo, hi)
      CROSS JOIN LATERAL (
        -- One short range of the index per cut slot, the ranges already inside the filter's times
        -- (OFFSET 0 keeps it a scan per range, never the whole window filtered).
        SELECT ${select} FROM flow_run
        WHERE flow_run.expected_start_time >= cut.lo AND flow_run.expected_start_time < cut.hi
          AND ${all(sql, keyConditions(sql, filter, "flow_run"))} AND ${sql.unsafe(IN_ROLLUP)}
        OFFSET 0
      ) edge
  `
  return {
    /**
     * Rows of a bucket (`bucket` of the expected start time or slot), a state, how many runs, their
     * summed run time (numeric) and lateness (microseconds), added up source by source: a few hundred
     * rows reach the final aggregate instead of every rollup row and run, which it would sort.
     */
    rows: (bucket: (time: Fragment) => Fragment) => {
      const atEpoch = sql`${epochSeconds(at)}::numeric`
      const nowSlot = sql`${plan.nowSlot!}::timestamptz`
      // Units whose Running runs may have started after the time of the request (a state timestamp
      // ahead of this clock, or a negative total run time): their runs are read one by one. Rare;
      // found through the bounds' partial indexes (OFFSET 0: the bound's index, not a walk of the
      // window's rows by their key). An hour is late when its row is or a delta of one of its slots is.
      const late = sql`
        SELECT DISTINCT ${unitSlot} AS slot, ${inHours} AS hour, rollup.state_name FROM (
          ${plan.hours
            ? sql`SELECT ${sql.unsafe(ROLLUP_ROW_COLUMNS)} FROM (SELECT ${sql.unsafe(ROLLUP_COLUMNS)} FROM flow_run_rollup_hour
                WHERE running_since_max > ${at}::timestamptz OFFSET 0) rollup
              WHERE ${hourRows}
              UNION ALL`
            : sql``}
          SELECT ${sql.unsafe(ROLLUP_ROW_COLUMNS)} FROM (SELECT ${columns} FROM ${table} WHERE running_since_max > ${at}::timestamptz OFFSET 0) rollup
          WHERE ${inWhole} AND NOT ${inHours} AND ${keys}
          UNION ALL SELECT ${sql.unsafe(ROLLUP_ROW_COLUMNS)} FROM flow_run_rollup_delta rollup
          WHERE ${inWhole} AND ${keys} AND rollup.running_since_max > ${at}::timestamptz
        ) rollup
        WHERE rollup.state_type = 'RUNNING' AND rollup.slot <> ${nowSlot}
      `
      // The whole units, each part apart: per bucket, state and whether the row's unit is wholly
      // before the time of the request (its runs not started are late by that time less their
      // expected start; in a unit after it, not at all). The slot holding it has its unfinished runs
      // read one by one; its hour is never a unit, so a unit, or a delta's quarter hour in it, is
      // wholly before that time when its first quarter hour is, and in one interval: a delta of a
      // whole hour needs its hour's slot only to be left out with the hour's late Running runs.
      const whole = sql.join(" UNION ALL ", false)(parts.map(({ from, unit, where }) => sql`
        SELECT bucket, state_type, state_name, count_runs,
          sum_run_time + count_running * ${atEpoch} - sum_running_since,
          (sum_lateness + CASE WHEN past THEN count_waiting * ${atEpoch} - sum_waiting_since ELSE 0 END) * 1000000
        FROM (
          SELECT ${bucket(sql`rollup.slot`)} AS bucket, rollup.state_type, rollup.state_name,
            rollup.slot + interval '15 minutes' <= ${at}::timestamptz AS past,
            sum(rollup.count_runs) AS count_runs, sum(rollup.sum_run_time) AS sum_run_time,
            sum(rollup.sum_lateness) AS sum_lateness, sum(rollup.count_waiting) AS count_waiting,
            sum(rollup.sum_waiting_since) AS sum_waiting_since, sum(rollup.count_running) AS count_running,
            sum(rollup.sum_running_since) AS sum_running_since
          FROM ${from}
          WHERE ${where} AND NOT (rollup.slot = ${nowSlot} AND rollup.state_type NOT IN ${sql.unsafe(FINAL_TYPES)})
            AND (rollup.state_type <> 'RUNNING' OR (${unit}, rollup.state_name) NOT IN (SELECT slot, state_name FROM late))
          GROUP BY 1, 2, 3, 4
        ) slots
      `))
      // The runs of `late`'s units, each a whole quarter hour or hour inside one interval.
      const lateRows = sql`
        SELECT ${bucket(sql`late.slot`)}, run.* FROM late
          CROSS JOIN LATERAL (
            SELECT flow_run.state_type, flow_run.state_name, count(*), sum(${runTime(sql, at)}), sum(${latenessMicros(sql, at)})
            FROM flow_run
            WHERE flow_run.state_type = 'RUNNING' AND flow_run.state_name = late.state_name
              AND flow_run.expected_start_time >= late.slot
              AND flow_run.expected_start_time < late.slot + CASE WHEN late.hour THEN interval '1 hour' ELSE interval '15 minutes' END
              AND ${all(sql, keyConditions(sql, filter, "flow_run"))} AND ${sql.unsafe(LIVE)}
            GROUP BY 1, 2
          ) run
      `
      // The unfinished runs of the cut slots and of the slot holding the time of the request, per
      // piece (each inside one interval: its start gives the bucket) and state.
      const liveRows = sql`
        SELECT ${bucket(sql`piece.lo`)}, run.* FROM unnest(${plan.livePieceFrom}::timestamptz[], ${plan.livePieceTo}::timestamptz[]) AS piece (lo, hi)
          CROSS JOIN LATERAL (
            SELECT flow_run.state_type, flow_run.state_name, count(*), sum(${runTime(sql, at)}), sum(${latenessMicros(sql, at)})
            FROM flow_run
            WHERE flow_run.expected_start_time >= piece.lo AND flow_run.expected_start_time < piece.hi
              AND ${all(sql, keyConditions(sql, filter, "flow_run"))} AND ${sql.unsafe(LIVE)}
            GROUP BY 1, 2
          ) run
      `
      // The final runs of the cut slots' pieces (see rollupPlan) per piece, interval and state.
      const pieces = sql`
        SELECT piece.inside, piece.less, ${bucket(sql`run.expected_start_time`)} AS own, run.state_type, run.state_name,
          count(*) AS count_runs, sum(run.run_time) AS run_time, sum(run.lateness) AS lateness
        FROM unnest(${plan.pieceFrom}::timestamptz[], ${plan.pieceTo}::timestamptz[], ${plan.pieceInside}::boolean[],
            ${plan.pieceLess}::timestamptz[]) AS piece (lo, hi, inside, less)
          CROSS JOIN LATERAL (
            SELECT flow_run.expected_start_time, flow_run.state_type, flow_run.state_name,
              ${runTime(sql, at)} AS run_time, ${latenessMicros(sql, at)} AS lateness
            FROM flow_run
            WHERE flow_run.expected_start_time >= piece.lo AND flow_run.expected_start_time < piece.hi
              AND ${all(sql, keyConditions(sql, filter, "flow_run"))} AND ${sql.unsafe(ROLLED_UP)}
            OFFSET 0
          ) run
        GROUP BY 1, 2, 3, 4, 5
      `
      // A piece inside counts in its own interval; one of a slot whose largest piece is derived is
      // taken from that piece's interval, where the slot's rollup row (of final runs) counts.
      const edgeRows = sql`
        SELECT own, state_type, state_name, count_runs, run_time, lateness FROM pieces WHERE inside
        UNION ALL
        SELECT ${bucket(sql`less`)}, state_type, state_name, -count_runs, -run_time, -lateness
        FROM pieces WHERE less IS NOT NULL
        UNION ALL
        SELECT ${bucket(sql`derived.at`)}, rollup.state_type, rollup.state_name, rollup.count_runs,
          rollup.sum_run_time, rollup.sum_lateness * 1000000
        FROM unnest(${plan.derivedSlots}::timestamptz[], ${plan.derivedAt}::timestamptz[]) AS derived (slot, at)
          JOIN ${ROLLUP_ROWS} ON rollup.slot = derived.slot
        -- Also as a condition on the rollup's key, for its index (a join alone hashes the whole rollup).
        WHERE rollup.slot = ANY(${plan.derivedSlots}::timestamptz[]) AND rollup.state_type IN ${sql.unsafe(FINAL_TYPES)}
          AND ${all(sql, keyConditions(sql, filter, "rollup"))}
      `
      const group = (source: Fragment) => sql`
        SELECT bucket, state_type, state_name, sum(count_runs), sum(run_time), sum(lateness)
        FROM (${source}) source (bucket, state_type, state_name, count_runs, run_time, lateness)
        GROUP BY 1, 2, 3
      `
      // Parts with nothing to read are left out (a window on the hour cuts no quarter hour): less to plan.
      const cut = plan.pieceFrom.length > 0 || plan.derivedSlots.length > 0
      return sql`
        WITH late AS MATERIALIZED (${late})${cut ? sql`, pieces AS MATERIALIZED (${pieces})` : sql``}
        ${group(whole)}
        UNION ALL ${lateRows}
        ${plan.livePieceFrom.length > 0 ? sql`UNION ALL ${liveRows}` : sql``}
        ${cut ? sql`UNION ALL ${group(edgeRows)}` : sql``}
        UNION ALL ${odd(sql`${bucket(sql`flow_run.expected_start_time`)}, flow_run.state_type, flow_run.state_name, count(*),
          sum(${runTime(sql, at)}), sum(${latenessMicros(sql, at)})`, sql`GROUP BY 1, 2, 3`)}
      `
    },
    count: sql`
      SELECT ${sql.join(" + ", false)(parts.map(({ from, where }) => sql`(SELECT coalesce(sum(rollup.count_runs), 0) FROM ${from} WHERE ${where})`))}
        + (${odd(sql`count(*)`)})
        ${plan.cutFrom.length > 0 ? sql`+ (SELECT count(*) FROM (${edges(sql`1`)}) edges)` : sql``}
    `
  }
}

/**
 * These queries touch few rows but the planner, not knowing the cut ranges, guesses many: without
 * this it spends hundreds of milliseconds compiling them (JIT), or starts parallel workers.
 */
export const withoutJit = <A, E, R>(sql: SqlClient, effect: Effect.Effect<A, E, R>) =>
  sql.withTransaction(
    Effect.zipRight(sql`SELECT set_config('jit', 'off', true), set_config('max_parallel_workers_per_gather', '0', true)`, effect)
  )

/**
 * The history of the runs the filter picks; undefined when the interval is not whole seconds or
 * the buckets reach past the year 9999.
 */
export const rollupHistory = (sql: SqlClient, options: HistoryWindow, filter: RollupFilter, at: Date) =>
  Effect.gen(function* () {
    if (!Number.isInteger(options.intervalSeconds) || options.intervalSeconds < 1) return undefined
    const { buckets, until, intervalStart, intervalEnd } = historyBuckets(options)
    const startMs = options.start.getTime()
    const intervalMs = options.intervalSeconds * 1000
    // Buckets past the year 9999 (which end at its last instant) are left to the plain history.
    if (!Number.isSafeInteger(startMs + buckets * intervalMs) || startMs + buckets * intervalMs > LATEST.getTime()) return undefined
    if (buckets === 0) return [] as Array<HistoryRow>
    const plan = rollupPlan({
      start: startMs,
      until: until.getTime(),
      boundaries: Array.from({ length: buckets + 1 }, (_, i) => startMs + i * intervalMs),
      filter,
      now: at.getTime(),
      hours: filter.deployments === undefined
    })
    // Intervals are whole seconds here: each run's interval found by date_bin, in exact microseconds.
    const rows = yield* withoutJit(
      sql,
      sql<{
        bucket_start: Date
        state_type: StateType
        state_name: string
        count_runs: string
        sum_estimated_run_time: number
        sum_estimated_lateness: number
      }>`
        SELECT bucket_start, state_type, state_name, sum(count_runs) AS count_runs,
          sum(run_time)::float8 AS sum_estimated_run_time, (sum(lateness) / 1000000)::float8 AS sum_estimated_lateness
        FROM (${sources(sql, plan, { start: options.start, until, history: true }, filter, at).rows(
          (time) => sql`date_bin(make_interval(secs => ${options.intervalSeconds}), ${time}, ${options.start}::timestamptz)`
        )})
          parts (bucket_start, state_type, state_name, count_runs, run_time, lateness)
        GROUP BY 1, 2, 3
        HAVING sum(count_runs) > 0
        ORDER BY 1, 2, 3
      `
    )
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
    return Array.from({ length: buckets }, (_, i): HistoryRow => ({
      interval_start: intervalStart(i),
      interval_end: intervalEnd(i),
      states: byBucket.get(i) ?? []
    }))
  })

/**
 * How many runs the filter picks: the rollup's runs of whole slots, the runs of the cut slots, and
 * the runs the rollup cannot hold (a count depends on no estimate: `at` is not needed).
 */
export const rollupCount = (sql: SqlClient, filter: RollupFilter, at: Date) =>
  Effect.map(
    withoutJit(
      sql,
      sql<{ count: string }>`
        SELECT (${sources(sql, rollupPlan({ boundaries: [], filter, hours: filter.deployments === undefined }), { history: false }, filter, at).count}) AS count
      `
    ),
    (rows) => Number(rows[0]!.count)
  )
