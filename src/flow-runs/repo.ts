/** Flow runs and their states in SQL. */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { compileFilter, Field, type FilterSpec } from "../domain/filters.ts"
import { newId } from "../domain/ids.ts"
import { defaultStateName, isFinal, type State, StateDetails, type StateCreate, type StateType } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { flowFilterSpec } from "../flows/repo.ts"
import type { FlowFilter } from "../flows/schemas.ts"
import { orchestrate, type RuleState } from "../orchestration/engine.ts"
import { coreFlowPolicy, minimalFlowPolicy } from "../orchestration/flow-policy.ts"
import { applyGlobalPolicy, type RunClock } from "../orchestration/global-policy.ts"
import { Transitions } from "../orchestration/transitions.ts"
import {
  type FlowRun,
  type FlowRunFilter,
  FlowRunPolicy,
  type FlowRunSort,
  type FlowRunUpdate
} from "./schemas.ts"

/** FlowRunFilter fields as conditions on the `flow_run` table. */
export const flowRunFilterSpec: FilterSpec = {
  id: Field.oneOf("flow_run.id", "uuid"),
  name: Field.text("flow_run.name"),
  tags: Field.tags("flow_run.tags"),
  deployment_id: Field.oneOf("flow_run.deployment_id", "uuid"),
  work_queue_name: Field.oneOf("flow_run.work_queue_name", "text"),
  state: Field.nested({
    type: Field.oneOf("flow_run.state_type", "text"),
    name: Field.oneOf("flow_run.state_name", "text")
  }),
  flow_version: Field.oneOf("flow_run.flow_version", "text"),
  start_time: Field.time("flow_run.start_time"),
  end_time: Field.time("flow_run.end_time"),
  expected_start_time: Field.time("flow_run.expected_start_time"),
  next_scheduled_start_time: Field.time("flow_run.next_scheduled_start_time"),
  // A subflow's parent flow run is the flow run of the task run that started it.
  parent_flow_run_id: (sql, c) =>
    c.any_ == null
      ? []
      : [sql`flow_run.parent_task_run_id IN (SELECT task_run.id FROM task_run WHERE task_run.flow_run_id = ANY(${c.any_}::uuid[]))`],
  parent_task_run_id: Field.oneOf("flow_run.parent_task_run_id", "uuid"),
  idempotency_key: Field.oneOf("flow_run.idempotency_key", "text"),
  created_by: (sql, c) => [
    ...(c.id_ != null ? [sql`(flow_run.created_by->>'id')::uuid = ANY(${c.id_}::uuid[])`] : []),
    ...(c.type_ != null ? [sql`flow_run.created_by->>'type' = ANY(${c.type_}::text[])`] : []),
    ...Field.nullness("flow_run.created_by")(sql, c)
  ]
}

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

/** A flow_run row with its current state (as JSON) alongside. */
interface FlowRunRow {
  readonly id: string
  readonly created: Date
  readonly updated: Date
  readonly name: string
  readonly flow_id: string
  readonly state_id: string | null
  readonly state_type: StateType | null
  readonly state_name: string | null
  readonly state_timestamp: Date | null
  readonly deployment_id: string | null
  readonly deployment_version: string | null
  readonly work_queue_id: string | null
  readonly work_queue_name: string | null
  readonly flow_version: string | null
  readonly parameters: Record<string, unknown>
  readonly idempotency_key: string | null
  readonly context: Record<string, unknown>
  readonly empirical_policy: unknown
  readonly tags: ReadonlyArray<string>
  readonly labels: FlowRun["labels"]
  readonly parent_task_run_id: string | null
  readonly run_count: number
  readonly expected_start_time: Date | null
  readonly next_scheduled_start_time: Date | null
  readonly start_time: Date | null
  readonly end_time: Date | null
  readonly total_run_time: number
  readonly auto_scheduled: boolean
  readonly infrastructure_document_id: string | null
  readonly infrastructure_pid: string | null
  readonly created_by: FlowRun["created_by"]
  readonly job_variables: Record<string, unknown> | null
  readonly state: StateRow | null
}

interface StateRow {
  readonly id: string
  readonly type: StateType
  readonly name: string | null
  /** A Date from a column, an ISO string from the joined JSON. */
  readonly timestamp: string | Date
  readonly message: string | null
  readonly data: unknown
  readonly state_details: unknown
}

const decodeDetails = Schema.decodeUnknownSync(StateDetails)
const encodeDetails = Schema.encodeSync(StateDetails)
const decodePolicy = Schema.decodeUnknownSync(FlowRunPolicy)

const toState = (row: StateRow): State => ({
  id: row.id,
  type: row.type,
  name: row.name,
  timestamp: new Date(row.timestamp),
  message: row.message,
  data: row.data ?? null,
  state_details: decodeDetails(row.state_details ?? {})
})

const seconds = (ms: number) => ms / 1000

/** The record answered for a row, with run time and lateness estimated at `at`. */
const toFlowRun = (row: FlowRunRow, at: Date): FlowRun => {
  const runningFor = row.state_type === "RUNNING" && row.state_timestamp !== null
    ? Math.max(0, seconds(at.getTime() - row.state_timestamp.getTime()))
    : 0
  let lateness = 0
  if (row.start_time !== null && row.expected_start_time !== null && row.start_time > row.expected_start_time) {
    lateness = seconds(row.start_time.getTime() - row.expected_start_time.getTime())
  } else if (row.start_time === null && row.expected_start_time !== null && row.expected_start_time < at && !isFinal(row.state_type)) {
    lateness = seconds(at.getTime() - row.expected_start_time.getTime())
  }
  const { state, state_timestamp: _, ...columns } = row
  return {
    ...columns,
    empirical_policy: decodePolicy(row.empirical_policy ?? {}),
    estimated_run_time: row.total_run_time + runningFor,
    estimated_start_time_delta: lateness,
    work_pool_id: null,
    work_pool_name: null,
    state: state === null ? null : toState(state)
  }
}

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
  readonly state: StateCreate
}

export interface FlowRunQuery {
  readonly flows?: FlowFilter | null | undefined
  readonly flow_runs?: FlowRunFilter | null | undefined
}

export class FlowRunsRepo extends Effect.Service<FlowRunsRepo>()("baton/FlowRunsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const transitions = yield* Transitions

    const selectRuns = sql`
      SELECT flow_run.*, to_jsonb(flow_run_state.*) AS state
      FROM flow_run LEFT JOIN flow_run_state ON flow_run_state.id = flow_run.state_id
    `

    const where = (query: FlowRunQuery) =>
      sql.and([
        compileFilter(sql, query.flow_runs, flowRunFilterSpec),
        query.flows == null
          ? sql`TRUE`
          : sql`EXISTS (SELECT 1 FROM flow WHERE flow.id = flow_run.flow_id AND ${compileFilter(sql, query.flows, flowFilterSpec)})`
      ])

    const readRow = (id: string) =>
      Effect.map(sql<FlowRunRow>`${selectRuns} WHERE flow_run.id = ${id}`, (rows) => rows[0])

    const read = (id: string) =>
      Effect.flatMap(readRow(id), (row) => Effect.map(now, (at) => (row === undefined ? undefined : toFlowRun(row, at))))

    /**
     * Moves the run to `proposed` with the global bookkeeping and stores the state in its history.
     * Runs inside the caller's transaction, on a row it has locked.
     */
    const writeState = Effect.fn("FlowRunsRepo.writeState")(function* (row: FlowRunRow, proposed: RuleState) {
      const at = yield* now
      // States of one run never share a timestamp: step past any taken one.
      const taken = yield* sql<{ timestamp: Date }>`
        SELECT timestamp FROM flow_run_state WHERE flow_run_id = ${row.id} AND timestamp >= ${at}
      `
      const takenTimes = new Set(taken.map((t) => t.timestamp.getTime()))
      let stamp = at.getTime()
      while (takenTimes.has(stamp)) stamp += 1
      const timestamp = new Date(stamp)
      const details = proposed.type === "SCHEDULED" && proposed.state_details.scheduled_time === null
        ? { ...proposed.state_details, scheduled_time: timestamp }
        : proposed.state_details
      const name = proposed.name ?? defaultStateName[proposed.type]
      const initial = row.state === null ? null : toState(row.state)
      const policy = decodePolicy(row.empirical_policy ?? {})
      const clock: RunClock = { ...row, resuming: policy.resuming }
      const next = applyGlobalPolicy(
        "flow_run",
        clock,
        initial === null
          ? null
          : { type: initial.type, name: initial.name, timestamp: initial.timestamp, scheduled_time: initial.state_details.scheduled_time },
        { type: proposed.type, name, timestamp, scheduled_time: details.scheduled_time }
      )
      const stateId = yield* newId
      yield* sql`
        INSERT INTO flow_run_state (id, created, updated, flow_run_id, type, name, timestamp, message, data, state_details)
        VALUES (${stateId}, ${at}, ${at}, ${row.id}, ${proposed.type}, ${name}, ${timestamp}, ${proposed.message},
                ${JSON.stringify(proposed.data ?? null)}::jsonb, ${JSON.stringify(encodeDetails({ ...details, flow_run_id: row.id }))}::jsonb)
      `
      yield* sql`
        UPDATE flow_run SET
          updated = ${at},
          state_id = ${stateId},
          state_type = ${next.state_type},
          state_name = ${next.state_name},
          state_timestamp = ${next.state_timestamp},
          start_time = ${next.start_time},
          end_time = ${next.end_time},
          run_count = ${next.run_count},
          total_run_time = ${next.total_run_time},
          expected_start_time = ${next.expected_start_time},
          next_scheduled_start_time = ${next.next_scheduled_start_time},
          empirical_policy = ${JSON.stringify({ ...policy, resuming: next.resuming ?? policy.resuming })}::jsonb
        WHERE id = ${row.id}
      `
    })

    /** Creates a run in its first state; with an idempotency key already used for the flow, returns that run. */
    const create = Effect.fn("FlowRunsRepo.create")(function* (input: NewFlowRun) {
      const id = yield* newId
      const at = yield* now
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const inserted = yield* sql<{ id: string }>`
            INSERT INTO flow_run (
              id, created, updated, name, flow_id, flow_version, parameters, context, parent_task_run_id,
              infrastructure_document_id, empirical_policy, tags, labels, idempotency_key, work_queue_name,
              job_variables, deployment_id
            ) VALUES (
              ${id}, ${at}, ${at}, ${input.name}, ${input.flow_id}, ${input.flow_version},
              ${JSON.stringify(input.parameters)}::jsonb, ${JSON.stringify(input.context)}::jsonb, ${input.parent_task_run_id},
              ${input.infrastructure_document_id}, ${JSON.stringify(input.empirical_policy)}::jsonb,
              ${JSON.stringify(input.tags)}::jsonb, ${JSON.stringify(input.labels)}::jsonb, ${input.idempotency_key},
              ${input.work_queue_name}, ${JSON.stringify(input.job_variables ?? {})}::jsonb, ${input.deployment_id}
            )
            ON CONFLICT (flow_id, idempotency_key) DO NOTHING
            RETURNING id
          `
          if (inserted.length === 0) {
            const existing = yield* sql<{ id: string }>`
              SELECT id FROM flow_run WHERE flow_id = ${input.flow_id} AND idempotency_key = ${input.idempotency_key}
            `
            return { id: existing[0]!.id, created: false }
          }
          const row = (yield* readRow(id))!
          yield* writeState(row, input.state)
          return { id, created: true }
        })
      )
    }, (effect) =>
      Effect.tap(effect, ({ id, created }) =>
        created
          ? Effect.flatMap(readRow(id), (row) =>
            row?.state
              ? transitions.publish({ kind: "flow_run", run_id: id, initial_state: null, validated_state: toState(row.state) })
              : Effect.void
          )
          : Effect.void
      ))

    /**
     * Proposes a state for the run: the policy decides, an accepted (or replacement) state is stored
     * with the global bookkeeping. The run's row is locked for the whole transaction, so two
     * proposals for one run are decided one after the other. Undefined when there is no such run.
     */
    const setState = Effect.fn("FlowRunsRepo.setState")(function* (id: string, proposed: StateCreate, force: boolean) {
      const result = yield* sql.withTransaction(
        Effect.gen(function* () {
          // Lock first, then read in a new statement: under READ COMMITTED a locking read of a join
          // would see the run's new state_id but the old snapshot's states.
          const locked = yield* sql`SELECT id FROM flow_run WHERE id = ${id} FOR UPDATE`
          if (locked.length === 0) return undefined
          const row = (yield* readRow(id))!
          const at = yield* now
          const initial = row.state === null ? null : toState(row.state)
          const outcome = orchestrate(force ? minimalFlowPolicy : coreFlowPolicy, {
            now: at,
            run: { ...row, empirical_policy: decodePolicy(row.empirical_policy ?? {}) },
            initial,
            // A state without a name is named after its type before any rule looks at it.
            proposed: { ...proposed, name: proposed.name ?? defaultStateName[proposed.type] }
          })
          if (outcome.proposed !== null) yield* writeState({ ...row, empirical_policy: outcome.policy }, outcome.proposed)
          const after = (yield* readRow(id))!
          return {
            status: outcome.decision.status,
            details: outcome.decision.details,
            state: after.state === null ? null : toState(after.state),
            initial,
            created: outcome.proposed !== null
          }
        })
      )
      if (result === undefined) return undefined
      const { initial, ...answer } = result
      // Published once the transaction has committed.
      if (answer.created && answer.state !== null) {
        yield* transitions.publish({ kind: "flow_run", run_id: id, initial_state: initial, validated_state: answer.state })
      }
      return answer
    })

    /** One stored state of a flow run. */
    const readState = (stateId: string) =>
      Effect.map(
        sql<StateRow>`SELECT * FROM flow_run_state WHERE id = ${stateId}`,
        (rows) => (rows[0] === undefined ? undefined : toState(rows[0]))
      )

    /** A flow run's states, oldest first. */
    const readStates = (flowRunId: string) =>
      Effect.map(
        sql<StateRow>`
          SELECT * FROM flow_run_state WHERE flow_run_id = ${flowRunId} ORDER BY timestamp
        `,
        (rows) => rows.map(toState)
      )

    /** Sets the given fields; false when there is no such run. */
    const update = Effect.fn("FlowRunsRepo.update")(function* (id: string, changes: FlowRunUpdate) {
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

    const filter = (query: FlowRunQuery & { readonly sort: FlowRunSort; readonly offset: number; readonly limit: number }) =>
      Effect.gen(function* () {
        const rows = yield* sql<FlowRunRow>`
          ${selectRuns}
          WHERE ${where(query)}
          ORDER BY ${sql.unsafe(orderBy[query.sort])}
          LIMIT ${query.limit} OFFSET ${query.offset}
        `
        const at = yield* now
        return rows.map((row) => toFlowRun(row, at))
      })

    const count = (query: FlowRunQuery) =>
      Effect.map(sql<{ count: string }>`SELECT count(*) AS count FROM flow_run WHERE ${where(query)}`, (rows) =>
        Number(rows[0]!.count)
      )

    const remove = (id: string) =>
      Effect.map(sql`DELETE FROM flow_run WHERE id = ${id} RETURNING id`, (rows) => rows.length > 0)

    const removeMatching = (flowRuns: FlowRunFilter | null | undefined, limit: number) =>
      Effect.map(
        sql<{ id: string }>`
          DELETE FROM flow_run WHERE id IN (SELECT id FROM flow_run WHERE ${where({ flow_runs: flowRuns })} LIMIT ${limit})
          RETURNING id
        `,
        (rows) => rows.map((r) => r.id)
      )

    return { create, read, setState, readState, readStates, update, filter, count, remove, removeMatching } as const
  })
}) {}

