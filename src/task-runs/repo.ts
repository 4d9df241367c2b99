/** Task runs in SQL; their states go through the state store, their transitions through the Orchestrator. */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { isIntegrityViolation, sqlErrorsAsDefects } from "../database/errors.ts"
import { transaction } from "../database/transactions.ts"
import { TaskRunConflict } from "./errors.ts"
import { queryCondition, type RelatedFilters } from "../queries/query.ts"
import { newId } from "../domain/ids.ts"
import type { State, StateCreate } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { estimates } from "../orchestration/global-policy.ts"
import type { HistoryWindow } from "../orchestration/history.ts"
import { RunStatesRepo, type StateRow, toState } from "../orchestration/repo.ts"
import { type TaskRun, type TaskRunCreate, TaskRunPolicy, type TaskRunSort } from "./schemas.ts"
import { type SortedPage } from "../database/rows.ts"
import { traced } from "../domain/traced.ts"

const orderBy: Record<TaskRunSort, string> = {
  ID_DESC: "task_run.id DESC",
  EXPECTED_START_TIME_ASC: "task_run.expected_start_time ASC, task_run.id",
  EXPECTED_START_TIME_DESC: "task_run.expected_start_time DESC, task_run.id",
  NAME_ASC: "task_run.name ASC, task_run.id",
  NAME_DESC: "task_run.name DESC, task_run.id",
  NEXT_SCHEDULED_START_TIME_ASC: "task_run.next_scheduled_start_time ASC, task_run.id",
  END_TIME_DESC: "task_run.end_time DESC, task_run.id"
}

// Rows typed and decoded by hand, not through a row schema (SqlSchema): task run reads are on the hot path (the bench's run lifecycle).
interface TaskRunRow extends Omit<TaskRun, "empirical_policy" | "estimated_run_time" | "estimated_start_time_delta" | "state"> {
  readonly state_timestamp: Date | null
  readonly empirical_policy: unknown
  readonly state: StateRow | null
  readonly created: Date
  readonly updated: Date
}

const decodePolicy = Schema.decodeUnknownSync(TaskRunPolicy)
const toTaskRun = (row: TaskRunRow, at: Date): TaskRun => {
  const { state, state_timestamp: _, ...columns } = row
  return {
    ...columns,
    empirical_policy: decodePolicy(row.empirical_policy ?? {}),
    ...estimates(row, at),
    state: state === null ? null : toState(state)
  }
}

/** The filters a task run query combines: the runs' own and those of related objects. */
export type TaskRunQuery = RelatedFilters

export class TaskRunsRepo extends Effect.Service<TaskRunsRepo>()("baton/TaskRunsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const states = yield* RunStatesRepo

    const where = (query: TaskRunQuery) => queryCondition(sql, "task_run", query)

    const readRow = (id: string) => states.readRow<TaskRunRow & { readonly id: string }>("task_run", id)

    const read = (id: string) =>
      Effect.flatMap(readRow(id), (row) => Effect.map(now, (at) => (row === undefined ? undefined : toTaskRun(row, at))))

    /** The task run with the name of its flow run (null without one), in one query; a failed statement is a defect. */
    const findWithFlowRunName = (id: string) =>
      Effect.gen(function* () {
        const rows = yield* sql<TaskRunRow & { readonly flow_run_name: string | null }>`
          SELECT task_run.*, to_jsonb(task_run_state.*) AS state, flow_run.name AS flow_run_name
          FROM task_run LEFT JOIN task_run_state ON task_run_state.id = task_run.state_id
            LEFT JOIN flow_run ON flow_run.id = task_run.flow_run_id
          WHERE task_run.id = ${id}
        `
        const row = rows[0]
        if (row === undefined) return Option.none()
        const { flow_run_name, ...taskRun } = row
        // The reference leaves an empty name out, as it does a missing one.
        return Option.some({ ...toTaskRun(taskRun, yield* now), flow_run_name: flow_run_name || null })
      }).pipe(Effect.orDie)

    /**
     * Creates a task run in its first state; the same flow run (or none), task key and dynamic key
     * return the existing one. Fails with the unique violation when the id belongs to another run.
     * The run answered is read in the same transaction, so a delete racing the create cannot take
     * it away from the answer.
     */
    const create = traced("TaskRunsRepo.create")(function* (input: TaskRunCreate & { readonly name: string; readonly state: StateCreate }) {
      const id = input.id ?? (yield* newId)
      const at = yield* now
      // A task run's labels: its flow run's, the flow run id, then the caller's.
      const parents = input.flow_run_id === null
        ? [{ labels: {} }]
        : yield* sql<{ labels: Record<string, unknown> | null }>`SELECT labels FROM flow_run WHERE id = ${input.flow_run_id}`
      if (parents.length === 0) return yield* new TaskRunConflict()
      const parentLabels = parents[0]!.labels ?? {}
      const labels = {
        ...parentLabels,
        ...(input.flow_run_id === null ? {} : { "prefect.flow-run.id": input.flow_run_id }),
        ...input.labels
      }
      // Only the same task (its flow run, or none, task key and dynamic key) is the existing run; an
      // id taken by another task run is a unique violation the caller answers as a conflict.
      const sameTask = input.flow_run_id === null
        ? sql`ON CONFLICT (task_key, dynamic_key) WHERE flow_run_id IS NULL DO NOTHING`
        : sql`ON CONFLICT (flow_run_id, task_key, dynamic_key) DO NOTHING`
      const attempt = transaction(
        sql,
        Effect.gen(function* () {
          const inserted = yield* sql<TaskRunRow & { readonly id: string }>`
            INSERT INTO task_run (
              id, created, updated, name, flow_run_id, task_key, dynamic_key, cache_key, cache_expiration,
              task_version, empirical_policy, tags, labels, task_inputs
            ) VALUES (
              ${id}, ${at}, ${at}, ${input.name}, ${input.flow_run_id}, ${input.task_key}, ${input.dynamic_key},
              ${input.cache_key}, ${input.cache_expiration}, ${input.task_version},
              ${JSON.stringify(input.empirical_policy)}::jsonb, ${JSON.stringify(input.tags)}::jsonb,
              ${JSON.stringify(labels)}::jsonb, ${JSON.stringify(input.task_inputs)}::jsonb
            )
            ${sameTask}
            RETURNING *
          `
          if (inserted.length === 0) {
            // The conflicting run committed before this statement went ahead, so this one sees it.
            // Locked until the answer is read: a delete meanwhile waits for this transaction.
            const existing = yield* sql<{ id: string }>`
              SELECT id FROM task_run
              WHERE ${input.flow_run_id === null ? sql`flow_run_id IS NULL` : sql`flow_run_id = ${input.flow_run_id}`}
                AND task_key = ${input.task_key} AND dynamic_key = ${input.dynamic_key}
              FOR SHARE
            `
            // Deleted since the insert saw it: the caller tries again.
            if (existing.length === 0) return undefined
            return { id: existing[0]!.id, created: false, state: null as State | null, run: (yield* read(existing[0]!.id))! }
          }
          // A new run has no state yet: the inserted row is all writeState needs.
          const row = { ...inserted[0]!, state: null, last_state_timestamp: null }
          const state = yield* states.writeState("task_run", row, input.state, input.empirical_policy)
          // Read before commit: a delete once committed must not leave the answer without its run.
          return { id, created: true, state: state as State | null, run: (yield* read(id))! }
        })
      )
      let result = yield* attempt
      // The run this one clashed with went away in between (deleted): insert again. Each round
      // needs a create and a delete of the same task to race it, so a few rounds always suffice.
      for (let round = 1; result === undefined && round < 5; round++) result = yield* attempt
      if (result === undefined) return yield* Effect.die(new Error("a task run with this key kept appearing and disappearing"))
      if (result.created && result.state !== null) yield* states.published("task_run", result.id, null, result.state)
      return { id: result.id, created: result.created, run: result.run }
    })

    const update = traced("TaskRunsRepo.update")(function* (id: string, changes: { readonly name?: string | undefined }) {
      const at = yield* now
      const rows = yield* sql`
        UPDATE task_run SET updated = ${at}${changes.name !== undefined ? sql`, name = ${changes.name}` : sql``}
        WHERE id = ${id} RETURNING id
      `
      return rows.length > 0
    })

    const filter = (query: TaskRunQuery & SortedPage<TaskRunSort>) =>
      Effect.gen(function* () {
        const rows = yield* sql<TaskRunRow>`
          SELECT task_run.*, to_jsonb(task_run_state.*) AS state
          FROM task_run LEFT JOIN task_run_state ON task_run_state.id = task_run.state_id
          WHERE ${where(query)}
          ORDER BY ${sql.unsafe(orderBy[query.sort])}
          LIMIT ${query.limit} OFFSET ${query.offset}
        `
        const at = yield* now
        return rows.map((row) => toTaskRun(row, at))
      })

    const count = (query: TaskRunQuery) =>
      Effect.map(sql<{ count: string }>`SELECT count(*) AS count FROM task_run WHERE ${where(query)}`, (rows) =>
        Number(rows[0]!.count)
      )

    /** Deletes the task run with its logs; false when there is no such task run. */
    const remove = (id: string) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const rows = yield* sql`DELETE FROM task_run WHERE id = ${id} RETURNING id`
          if (rows.length > 0) yield* sql`DELETE FROM log WHERE task_run_id = ${id}`
          return rows.length > 0
        })
      )

    /** A flow run's task runs with the subflow run each started, for its graph. */
    const forGraph = (flowRunId: string) =>
      Effect.gen(function* () {
        const rows = yield* sql<TaskRunRow & { subflow: any }>`
          SELECT task_run.*, to_jsonb(task_run_state.*) AS state,
            (SELECT jsonb_build_object(
                'id', sub.id, 'label', flow.name || ' / ' || sub.name, 'state_type', sub.state_type,
                'expected_start_time', sub.expected_start_time, 'start_time', sub.start_time, 'end_time', sub.end_time)
             FROM flow_run sub JOIN flow ON flow.id = sub.flow_id
             WHERE sub.parent_task_run_id = task_run.id LIMIT 1) AS subflow
          FROM task_run LEFT JOIN task_run_state ON task_run_state.id = task_run.state_id
          WHERE task_run.flow_run_id = ${flowRunId}
          ORDER BY coalesce(task_run.start_time, task_run.expected_start_time), task_run.id
        `
        const at = yield* now
        const date = (v: string | null) => (v === null ? null : new Date(v))
        return rows.map((row) => {
          const task = toTaskRun(row, at)
          const sub = row.subflow
          return {
            ...task,
            subflow: sub === null
              ? null
              : {
                id: sub.id,
                label: sub.label,
                state_type: sub.state_type,
                expected_start_time: date(sub.expected_start_time),
                start_time: date(sub.start_time),
                end_time: date(sub.end_time)
              }
          }
        })
      })

    const history = (query: TaskRunQuery, options: HistoryWindow) =>
      states.history("task_run", where(query), options)

    return sqlErrorsAsDefects({
      // An id another task run has (or a flow run deleted meanwhile) is a conflict.
      create: (input: Parameters<typeof create>[0]) =>
        create(input).pipe(Effect.catchIf(isIntegrityViolation, () => new TaskRunConflict())),
      forGraph,
      history,
      find: (id: string) => Effect.map(read(id), Option.fromNullable),
      findWithFlowRunName,
      findState: (stateId: string) => Effect.map(states.readState("task_run", stateId), Option.fromNullable),
      readStates: (taskRunId: string) => states.readStates("task_run", taskRunId),
      update,
      filter,
      count,
      remove
    })
  }),
  dependencies: [RunStatesRepo.Default]
}) {}
