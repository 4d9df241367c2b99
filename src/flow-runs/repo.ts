/** Flow runs in SQL; their states go through the state store, their transitions through the Orchestrator. */
import { SqlClient, type Statement } from "@effect/sql"
import { Effect, Option } from "effect"
import { isIntegrityViolation, sqlErrorAsDefect, sqlErrorsAsDefects } from "../database/errors.ts"
import { ConcurrencyRules, deploymentConcurrencyColumn } from "../concurrency/rules.ts"
import { queryCondition } from "../queries/query.ts"
import { newId } from "../domain/ids.ts"
import type { StateCreate, StateType } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import type { HistoryWindow } from "../orchestration/history.ts"
import { RunStatesRepo } from "../orchestration/repo.ts"
import { transitionNote } from "../orchestration/transitions.ts"
import { rollupCount, rollupFilter, rollupHistory, withoutJit } from "./history.ts"
import { flowRunOrder, flowRunPage, type FlowRunQuery } from "./page.ts"
import { flowRunJsonSql } from "./page-json.ts"
import { type FlowRunRow, toFlowRun } from "./row.ts"
import {
  type FlowRun,
  type FlowRunFilter,
  type FlowRunSort,
  type FlowRunUpdate
} from "./schemas.ts"
import { FlowRunConflict } from "./errors.ts"
import { type SortedPage } from "../database/rows.ts"
import { traced } from "../domain/traced.ts"

export interface NewFlowRun {
  readonly flow_id: string
  readonly name: string
  readonly flow_version: string | null
  readonly parameters: Record<string, unknown>
  readonly context: Record<string, unknown>
  readonly parent_task_run_id: string | null
  readonly infrastructure_document_id: string | null
  readonly empirical_policy: FlowRun["empirical_policy"]
  readonly tags: ReadonlyArray<string>
  readonly labels: NonNullable<FlowRun["labels"]>
  readonly idempotency_key: string | null
  readonly work_queue_name: string | null
  readonly job_variables: Record<string, unknown> | null
  readonly deployment_id: string | null
  readonly deployment_version?: string | null
  readonly work_queue_id?: string | null
  readonly created_by?: FlowRun["created_by"]
  readonly state: StateCreate
}

// Rows typed and decoded by hand, not through a row schema (SqlSchema): flow run reads are on the hot path (the bench's run lifecycle).
export class FlowRunsRepo extends Effect.Service<FlowRunsRepo>()("baton/FlowRunsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const states = yield* RunStatesRepo
    const concurrency = yield* ConcurrencyRules

    /** A run's columns with its state and its queue's and pool's names (FlowRunRow), and what they join. */
    const runColumns = sql`flow_run.*, to_jsonb(flow_run_state.*) AS state,
      work_queue.name AS queue_name, work_pool.id AS work_pool_id, work_pool.name AS work_pool_name`
    const runJoins = sql`LEFT JOIN flow_run_state ON flow_run_state.id = flow_run.state_id
      LEFT JOIN work_queue ON work_queue.id = flow_run.work_queue_id
      LEFT JOIN work_pool ON work_pool.id = work_queue.work_pool_id`

    const selectRuns = sql`SELECT ${runColumns} FROM flow_run ${runJoins}`

    const where = (query: FlowRunQuery) => queryCondition(sql, "flow_run", query)

    /** selectRuns over `page`, a query of flow_run rows: what is joined is only the page's runs. */
    const selectPage = (page: Statement.Fragment) => sql`SELECT ${runColumns} FROM (${page}) flow_run ${runJoins}`

    /**
     * The runs `listed` names (a query of `id` and `position` rows), in position order, in one
     * statement with the query (a run deleted meanwhile is left out).
     */
    const readListed = (listed: Statement.Fragment) =>
      Effect.gen(function* () {
        const rows = yield* sql<FlowRunRow>`
          SELECT ${runColumns} FROM (${listed}) listed JOIN flow_run ON flow_run.id = listed.id ${runJoins}
          ORDER BY listed.position
        `
        const at = yield* now
        return rows.map((row) => toFlowRun(row, at))
      })

    /**
     * The runs `listed` names, as readListed reads them, in one statement with a query's own facts:
     * `along.columns` (one JSON value, `along`) over `along.from`, a query of one row or none, after
     * the statement's `along.with` (its CTEs, which `listed` may read and which may write). The
     * facts come once even when no run is listed; nothing when `from` has no row.
     */
    const readListedAlong = <Along>(
      along: { readonly with: Statement.Fragment; readonly from: Statement.Fragment; readonly columns: Statement.Fragment },
      listed: Statement.Fragment
    ) =>
      Effect.gen(function* () {
        const rows = yield* sql<FlowRunRow & { readonly along: Along }>`
          WITH ${along.with}
          SELECT ${along.columns} AS along, ${runColumns} FROM ${along.from}
            LEFT JOIN ((${listed}) listed JOIN flow_run ON flow_run.id = listed.id ${runJoins}) ON true
          ORDER BY listed.position
        `
        if (rows.length === 0) return Option.none()
        const at = yield* now
        return Option.some({
          along: rows[0]!.along,
          runs: rows.flatMap(({ along: _, ...row }) => (row.id === null ? [] : [toFlowRun(row, at)]))
        })
      })

    const readRow = (id: string) =>
      Effect.map(sql<FlowRunRow>`${selectRuns} WHERE flow_run.id = ${id}`, (rows) => rows[0])

    const read = (id: string) =>
      Effect.flatMap(readRow(id), (row) => Effect.map(now, (at) => (row === undefined ? undefined : toFlowRun(row, at))))

    /**
     * Creates a run in its first state and answers its record (`run`); with an idempotency key
     * already used for the flow, that run's id, not created (its record is read apart).
     */
    const create = traced("FlowRunsRepo.create")(function* (input: NewFlowRun) {
      const id = yield* newId
      const at = yield* now
      const plan = yield* states.planFirstState("flow_run", { id, parent_task_run_id: input.parent_task_run_id }, input.state, input.empirical_policy, at)
      const next = plan.next
      // The run, its first state and its note in one statement, which answers the run's record as
      // selectRuns reads it (no read after it); a used idempotency key inserts none of them.
      const inserted = yield* sql<FlowRunRow>`
        WITH run AS (
          INSERT INTO flow_run (
            id, created, updated, name, flow_id, flow_version, parameters, context, parent_task_run_id,
            infrastructure_document_id, empirical_policy, tags, labels, idempotency_key, work_queue_name,
            job_variables, deployment_id, deployment_version, work_queue_id, created_by,
            state_id, state_type, state_name, state_timestamp, start_time, end_time, run_count, total_run_time,
            expected_start_time, next_scheduled_start_time
          ) VALUES (
            ${id}, ${at}, ${at}, ${input.name}, ${input.flow_id}, ${input.flow_version},
            ${JSON.stringify(input.parameters)}::jsonb, ${JSON.stringify(input.context)}::jsonb, ${input.parent_task_run_id},
            ${input.infrastructure_document_id}, ${JSON.stringify(plan.finalPolicy)}::jsonb,
            ${JSON.stringify(input.tags)}::jsonb, ${JSON.stringify(input.labels)}::jsonb, ${input.idempotency_key},
            ${input.work_queue_name}, ${JSON.stringify(input.job_variables ?? {})}::jsonb, ${input.deployment_id},
            ${input.deployment_version ?? null}, ${input.work_queue_id ?? null},
            ${input.created_by ? JSON.stringify(input.created_by) : null}::jsonb,
            ${plan.state.id}, ${next.state_type}, ${next.state_name}, ${next.state_timestamp}, ${next.start_time},
            ${next.end_time}, ${next.run_count}, ${next.total_run_time}, ${next.expected_start_time},
            ${next.next_scheduled_start_time}
          )
          ON CONFLICT (flow_id, idempotency_key) DO NOTHING
          RETURNING *, xmin::text AS row_version
        ), stored AS (
          INSERT INTO flow_run_state (${plan.stateColumns}) SELECT ${plan.stateValues} FROM run RETURNING *
        ), noted AS (
          INSERT INTO event_outbox (body) SELECT ${JSON.stringify(transitionNote("flow_run", id, next.run_count, null, plan.state))}::jsonb FROM run
        )
        SELECT r.*, to_jsonb(stored.*) AS state, work_queue.name AS queue_name, work_pool.id AS work_pool_id,
          work_pool.name AS work_pool_name ${sql.literal(deploymentConcurrencyColumn)}
        FROM run r LEFT JOIN stored ON stored.id = r.state_id
          LEFT JOIN work_queue ON work_queue.id = r.work_queue_id
          LEFT JOIN work_pool ON work_pool.id = work_queue.work_pool_id
      `
      if (inserted.length === 0) {
        const existing = yield* sql<{ id: string }>`
          SELECT id FROM flow_run WHERE flow_id = ${input.flow_id} AND idempotency_key = ${input.idempotency_key}
        `
        return { id: existing[0]!.id, created: false, state: undefined, run: undefined }
      }
      const { row_version, deployment_concurrency, ...row } = inserted[0]! as FlowRunRow & {
        readonly row_version: string
        readonly deployment_concurrency: unknown
      }
      // Its first transition starts from this row (RunStatesRepo.keepCreated), as from a read.
      yield* states.keepCreated({ ...row, row_version, deployment_concurrency } as FlowRunRow & { readonly row_version: string })
      return { id, created: true, state: plan.state, run: toFlowRun(row, yield* now) }
    }, (effect, input) =>
      Effect.tap(effect, (result) =>
        result.created ? states.published("flow_run", result.id, null, result.state!, input.work_queue_id ?? null) : Effect.void))

    const findState = (stateId: string) => Effect.map(states.readState("flow_run", stateId), Option.fromNullable)
    const readStates = (flowRunId: string) => states.readStates("flow_run", flowRunId)

    /** Sets the given fields; false when there is no such run. */
    const update = traced("FlowRunsRepo.update")(function* (id: string, changes: FlowRunUpdate) {
      const at = yield* now
      const sets = [sql`updated = ${at}`]
      if (changes.name != null) sets.push(sql`name = ${changes.name}`)
      if (changes.flow_version !== undefined) sets.push(sql`flow_version = ${changes.flow_version}`)
      if (changes.parameters !== undefined) sets.push(sql`parameters = ${JSON.stringify(changes.parameters)}::jsonb`)
      if (changes.empirical_policy !== undefined) {
        sets.push(sql`empirical_policy = ${JSON.stringify(changes.empirical_policy)}::jsonb`)
      }
      if (changes.tags !== undefined) sets.push(sql`tags = ${JSON.stringify(changes.tags)}::jsonb`)
      if (changes.infrastructure_pid !== undefined) sets.push(sql`infrastructure_pid = ${changes.infrastructure_pid}`)
      if (changes.job_variables != null) sets.push(sql`job_variables = ${JSON.stringify(changes.job_variables)}::jsonb`)
      const rows = yield* sql`UPDATE flow_run SET ${sql.csv(sets)} WHERE id = ${id} RETURNING id`
      return rows.length > 0
    })

    /** A page of runs as records: what `filterJson`'s texts must encode to (the API answers with those texts). */
    const filter = (query: FlowRunQuery & SortedPage<FlowRunSort>) =>
      Effect.gen(function* () {
        const rows = yield* sql<FlowRunRow>`${selectPage(flowRunPage(sql, query))} ORDER BY ${flowRunOrder(sql, query.sort)}`
        const at = yield* now
        return rows.map((row) => toFlowRun(row, at))
      })

    const runJson = sql.unsafe(flowRunJsonSql("request.at"))

    /** A page as `filter` reads it, each run as its JSON text (page-json.ts), in order. */
    const filterJson = (query: FlowRunQuery & SortedPage<FlowRunSort>) =>
      Effect.gen(function* () {
        const at = yield* now
        const rows = yield* sql<{ run: string }>`
          SELECT ${runJson}::text AS run
          FROM (${flowRunPage(sql, query)}) flow_run ${runJoins} CROSS JOIN (SELECT ${at}::timestamptz AS at) request
          ORDER BY ${flowRunOrder(sql, query.sort)}
        `
        return rows.map((row) => row.run)
      })

    /** The runs with these ids, in that order (ids of no run left out). */
    const readMany = (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed([] as Array<FlowRun>)
        : Effect.gen(function* () {
          const rows = yield* sql<FlowRunRow>`${selectRuns} WHERE flow_run.id = ANY(${ids}::uuid[])`
          const at = yield* now
          const byId = new Map(rows.map((row) => [row.id, toFlowRun(row, at)]))
          return ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []))
        })

    /** Filtered on nothing but expected start time, state and deployment ids, from the rollup (see history.ts). */
    const count = (query: FlowRunQuery) => {
      const filter = rollupFilter(query)
      return filter !== undefined
        ? Effect.flatMap(now, (at) => rollupCount(sql, filter, at))
        : Effect.map(sql<{ count: string }>`SELECT count(*) AS count FROM flow_run WHERE ${where(query)}`, (rows) =>
          Number(rows[0]!.count)
        )
    }

    /**
     * Deletes the runs the condition picks (at most `limit`); a run holding a deployment concurrency
     * slot gives it back. The ids deleted.
     */
    const removeWhere = (condition: ReturnType<typeof where>, limit: number) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const deleted = yield* sql<{ id: string; deployment_id: string | null; state_type: StateType | null; lease_id: string | null }>`
            WITH doomed AS (
              SELECT flow_run.id FROM flow_run WHERE ${condition} LIMIT ${limit}
            ),
            gone AS (
              DELETE FROM flow_run WHERE id IN (SELECT id FROM doomed)
              RETURNING id, deployment_id, state_type, state_id
            )
            SELECT gone.id, gone.deployment_id, gone.state_type,
              s.state_details ->> 'deployment_concurrency_lease_id' AS lease_id
            FROM gone LEFT JOIN flow_run_state s ON s.id = gone.state_id
          `
          for (const run of deleted) yield* concurrency.releaseDeletedFlow(run)
          const ids = deleted.map((r) => r.id)
          // Their logs go with them.
          if (ids.length > 0) yield* sql`DELETE FROM log WHERE flow_run_id = ANY(${ids}::uuid[])`
          return ids
        })
      )

    const remove = (id: string) => Effect.map(removeWhere(sql`flow_run.id = ${id}`, 1), (ids) => ids.length > 0)

    const removeMatching = (flowRuns: FlowRunFilter | null | undefined, limit: number) =>
      removeWhere(where({ flow_runs: flowRuns }), limit)

    /** Merges `labels` over the run's labels; false when there is no such run. */
    const updateLabels = (id: string, labels: Record<string, unknown>) =>
      Effect.flatMap(now, (at) =>
        Effect.map(
          sql`
            UPDATE flow_run SET updated = ${at}, labels = coalesce(labels, '{}'::jsonb) || ${JSON.stringify(labels)}::jsonb
            WHERE id = ${id} RETURNING id
          `,
          (rows) => rows.length > 0
        )
      )

    /** Average lateness in seconds of the matching runs; null when none match. */
    const lateness = (query: FlowRunQuery) =>
      Effect.gen(function* () {
        const at = yield* now
        const rows = yield* sql<{ lateness: number | null }>`
          SELECT avg(${states.estimatedLateness("flow_run", at)})::float8 AS lateness FROM flow_run WHERE ${where(query)}
        `
        return rows[0]?.lateness ?? null
      })

    /**
     * Filtered on nothing but expected start time, state and deployment ids, from the rollup (see
     * history.ts); else over the matching runs.
     */
    const history = (query: FlowRunQuery, options: HistoryWindow) =>
      Effect.gen(function* () {
        const filter = rollupFilter(query)
        if (filter !== undefined) {
          const fast = yield* rollupHistory(sql, options, filter, yield* now)
          if (fast !== undefined) return fast
        }
        return yield* withoutJit(sql, states.history("flow_run", where(query), options))
      })

    /** Ids of up to `limit` runs matching the filter, newest first. */
    const idsMatching = (flowRuns: FlowRunFilter | null | undefined, limit: number) =>
      Effect.map(
        sql<{ id: string }>`SELECT id FROM flow_run WHERE ${where({ flow_runs: flowRuns })} ORDER BY id DESC LIMIT ${limit}`,
        (rows) => rows.map((r) => r.id)
      )

    /**
     * How many runs are in each of `types` (those with none are left out). An index range scan
     * (state_type, id) per type: cheap for the types runs pass through, not for the final ones,
     * where runs pile up.
     */
    const countByStateType = (types: ReadonlyArray<StateType>) =>
      Effect.map(
        sql<{ state_type: StateType; count: number }>`
          SELECT state_type, count(*)::int AS count FROM flow_run WHERE state_type = ANY(${types}::text[]) GROUP BY state_type
        `,
        (rows) => new Map(rows.map((row) => [row.state_type, row.count]))
      )

    return {
      ...sqlErrorsAsDefects({
        // The flow was deleted while the run was made.
        create: (input: NewFlowRun) => create(input).pipe(Effect.catchIf(isIntegrityViolation, () => new FlowRunConflict())),
        find: (id: string) => Effect.map(read(id), Option.fromNullable),
        readMany,
        readListed,
        findState,
        readStates,
        update,
        updateLabels,
        filter,
        filterJson,
        count,
        lateness,
        history,
        idsMatching,
        countByStateType,
        remove,
        removeMatching
      }),
      // Generic: typed by the caller's facts.
      readListedAlong: <Along>(
        along: Parameters<typeof readListedAlong>[0],
        listed: Statement.Fragment
      ) => sqlErrorAsDefect(readListedAlong<Along>(along, listed))
    }
  }),
  dependencies: [ConcurrencyRules.Default, RunStatesRepo.Default]
}) {}

