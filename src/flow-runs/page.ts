/**
 * Pages of flow runs: the ORDER BY of each sort, and the query of one page, read one state type at a
 * time where an index makes that cheaper.
 */
import type { SqlClient, Statement } from "@effect/sql"
import type { StateType } from "../domain/states.ts"
import { queryCondition, type RelatedFilters } from "../queries/query.ts"
import type { FlowRunSort } from "./schemas.ts"
import { type SortedPage } from "../database/rows.ts"

const orderBy: Record<FlowRunSort, string> = {
  ID_DESC: "flow_run.id DESC",
  START_TIME_ASC: "coalesce(flow_run.start_time, flow_run.expected_start_time) ASC, flow_run.id",
  START_TIME_DESC: "coalesce(flow_run.start_time, flow_run.expected_start_time) DESC, flow_run.id",
  EXPECTED_START_TIME_ASC: "flow_run.expected_start_time ASC, flow_run.id",
  EXPECTED_START_TIME_DESC: "flow_run.expected_start_time DESC, flow_run.id",
  NAME_ASC: "flow_run.name ASC, flow_run.id",
  NAME_DESC: "flow_run.name DESC, flow_run.id",
  NEXT_SCHEDULED_START_TIME_ASC: "flow_run.next_scheduled_start_time ASC, flow_run.id",
  END_TIME_DESC: "flow_run.end_time DESC, flow_run.id"
}

/** Sorts with an index on (state_type, sort key): a filter on several state types is read one type at a time. */
const splitSorts: ReadonlySet<FlowRunSort> = new Set<FlowRunSort>([
  "ID_DESC",
  "START_TIME_ASC",
  "START_TIME_DESC",
  "EXPECTED_START_TIME_ASC",
  "EXPECTED_START_TIME_DESC"
])

/**
 * The distinct state types of `flow_runs.state.type.any_` when there are several and the page can be
 * read one type at a time: the condition is ANDed with everything else (no or_ above it), and the
 * sort has its (state_type, key) index and ends in the unique id, so the merged page is the same.
 */
const splitStateTypes = (query: FlowRunQuery & { readonly sort: FlowRunSort }): ReadonlyArray<StateType> | undefined => {
  if (!splitSorts.has(query.sort)) return undefined
  const runs = query.flow_runs
  if (runs == null || runs.operator === "or_") return undefined
  const state = runs.state
  if (state == null || (state.operator === "or_" && state.name != null)) return undefined
  const types = state.type?.any_
  if (types == null) return undefined
  const distinct = [...new Set(types)]
  return distinct.length >= 2 ? distinct : undefined
}

/** The query with `flow_runs.state.type.any_` narrowed to one type. */
const withStateType = <Q extends FlowRunQuery>(query: Q, type: StateType): Q => {
  const runs = query.flow_runs!
  const state = runs.state!
  return { ...query, flow_runs: { ...runs, state: { ...state, type: { ...state.type, any_: [type] } } } }
}

/** The filters a flow run query combines: the runs' own and those of related objects. */
export type FlowRunQuery = RelatedFilters

/**
 * The query of one page of flow_run rows (`SELECT flow_run.* …`, sorted, limited). A filter on several
 * state types sorted by time or id reads each state's newest (or oldest) runs from its
 * (state_type, sort key) index, then merges them: one index scan cannot give several state types in
 * sort order, and walking the sort alone reads every run of the other states on the way.
 */
export const flowRunPage = (
  sql: SqlClient.SqlClient,
  query: FlowRunQuery & SortedPage<FlowRunSort>
): Statement.Fragment => {
  const where = (q: FlowRunQuery) => queryCondition(sql, "flow_run", q)
  const order = sql.unsafe(orderBy[query.sort])
  const types = splitStateTypes(query)
  if (types === undefined) {
    return sql`SELECT flow_run.* FROM flow_run WHERE ${where(query)} ORDER BY ${order} LIMIT ${query.limit} OFFSET ${query.offset}`
  }
  const branches = types.map((type) =>
    sql`(SELECT flow_run.* FROM flow_run WHERE ${where(withStateType(query, type))} ORDER BY ${order} LIMIT ${query.limit + query.offset})`
  )
  const union = branches.slice(1).reduce((all, branch) => sql`${all} UNION ALL ${branch}`, branches[0]!)
  return sql`SELECT * FROM (${union}) flow_run ORDER BY ${order} LIMIT ${query.limit} OFFSET ${query.offset}`
}

/** The ORDER BY of a flow run sort (over a `flow_run` row source). */
export const flowRunOrder = (sql: SqlClient.SqlClient, sort: FlowRunSort) => sql.unsafe(orderBy[sort])
