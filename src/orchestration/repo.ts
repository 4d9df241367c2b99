/**
 * States of flow runs and task runs in SQL: one mechanism for both kinds of run. A transition locks
 * the run's row, runs the policy, stores the resulting state with the global bookkeeping and its
 * note in the event outbox, and publishes the committed transition.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { decodeStateDetails } from "../domain/fast-decode.ts"
import { stateDetailsWire } from "../domain/state-wire.ts"
import { newId } from "../domain/ids.ts"
import { defaultStateName, type State, type StateCreate, type StateType } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { sqlErrorAsDefect, sqlErrorsAsDefects } from "../database/errors.ts"
import { afterCommit, inOpenTransaction, transaction } from "../database/transactions.ts"
import { orchestrate, type Outcome, type Rule, type RuleRunBase, type RuleState } from "./engine.ts"
import { applyGlobalPolicy, type RunClock, type RunLinks, stateLinks } from "./global-policy.ts"
import { historyBuckets, type HistoryWindow } from "./history.ts"
import { Settings } from "../settings/settings.ts"
import { transitionNote, Transitions } from "./transitions.ts"
import { traced } from "../domain/traced.ts"

export type RunKind = "flow_run" | "task_run"

/** The columns every run table has for its state, and its current state joined as JSON. */
export interface RunStateRow extends Omit<RunClock, "resuming">, RunLinks {
  readonly id: string
  readonly state_id: string | null
  readonly empirical_policy: unknown
  readonly state: StateRow | null
  /**
   * The latest timestamp among the run's states, when the row was read with it (a transition's
   * locked read); a new state is stamped after it. Undefined makes writeState look it up.
   */
  readonly last_state_timestamp?: Date | string | null
}

// Rows typed and decoded by hand, not through a row schema (SqlSchema): state transitions are on the hot path (the bench's run lifecycle).
export interface StateRow {
  readonly id: string
  readonly type: StateType
  readonly name: string | null
  /** A Date from a column, an ISO string from joined JSON. */
  readonly timestamp: string | Date
  readonly message: string | null
  readonly data: unknown
  readonly state_details: unknown
}


export const toState = (row: StateRow): State => ({
  id: row.id,
  type: row.type,
  name: row.name,
  timestamp: new Date(row.timestamp),
  message: row.message,
  data: row.data ?? null,
  state_details: decodeStateDetails(row.state_details ?? {})
})

const toTransitionState = (state: State) => ({
  type: state.type,
  name: state.name,
  timestamp: state.timestamp,
  scheduled_time: state.state_details.scheduled_time
})

/** What a policy needs besides the run's own columns (e.g. the enclosing flow run of a task run). */
export interface TransitionInput<Row extends RunStateRow, Run extends RuleRunBase> {
  readonly kind: RunKind
  readonly id: string
  readonly proposed: StateCreate
  readonly rules: ReadonlyArray<Rule<Run>>
  /**
   * Columns the kind of run reads with its locked row (`, <expression> AS <name>` over the run as
   * `r`), so the facts its rules need come in the same statement.
   */
  readonly columns?: string
  /** The run as the rules see it, from its row (and facts the caller looks up in the transaction). */
  readonly ruleRun: (row: Row, proposed: RuleState) => Effect.Effect<Run>
  /** Work the kind of run does after storing a state, in the same transaction (e.g. the task cache). */
  readonly afterStore?: (row: Row, state: State, initial: State | null) => Effect.Effect<void>
  /**
   * Rules that need the database (concurrency slots), after the policy's: they may take slots for
   * the transition, or turn it into another decision. In the same transaction.
   */
  readonly secure?: (row: Row, run: Run, outcome: Outcome<Run>, initial: State | null) => Effect.Effect<Outcome<Run>>
  /**
   * Whether deciding a transition of this run reads and writes nothing but the run's row (`secure`
   * and `afterStore` have nothing to do for it: no slot to take or give back). Such a transition is
   * decided without a transaction and stored only if the row is still the version it read (one
   * statement); when it changed meanwhile, the transition is decided again under the row's lock.
   */
  readonly lockFree?: (row: Row) => boolean
  /**
   * What must still hold of the run (as `flow_run` or `task_run`) when a lock-free transition is
   * stored, besides its version: what `lockFree` read of other tables (a deployment's limit).
   */
  readonly lockFreeGuard?: string
}

/** Runs' rows a process keeps from its lock-free transitions (RunStatesRepo's recentRows). */
export const RECENT_ROWS = 1000

/** The outcome of a transition decided without the lock whose row changed before it was stored. */
const CHANGED = Symbol("changed")

const tables = {
  flow_run: { run: "flow_run", states: "flow_run_state", fk: "flow_run_id" },
  task_run: { run: "task_run", states: "task_run_state", fk: "task_run_id" }
} as const

export class RunStatesRepo extends Effect.Service<RunStatesRepo>()("baton/RunStatesRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const transitions = yield* Transitions
    const queueSizes = (yield* Settings).server.tasks.scheduling

    /** A run's row with its current state; `select` adds the kind's own columns. */
    const readRow = <Row extends RunStateRow>(kind: RunKind, id: string) => {
      const t = tables[kind]
      return Effect.map(
        sql<Row>`
          SELECT r.*, to_jsonb(s.*) AS state
          FROM ${sql(t.run)} r LEFT JOIN ${sql(t.states)} s ON s.id = r.state_id
          WHERE r.id = ${id}
        `,
        (rows) => rows[0]
      )
    }

    /**
     * What storing `proposed` as the run's new state means: the state (stamped after `latest`, the
     * run's latest state timestamp) and the run's columns after the global bookkeeping.
     */
    const planState = (
      kind: RunKind,
      row: RunStateRow,
      proposed: RuleState,
      policy: object,
      options: {
        readonly at: Date
        readonly latest: Date | string | null
        readonly stateId: string
        readonly policyAfter?: object
        readonly resetRunCount?: boolean
      }
    ) => {
      const t = tables[kind]
      const { at, stateId } = options
      // States of one run never share a timestamp, and a new one sorts after every earlier one.
      const latestTime = options.latest === null ? -Infinity : new Date(options.latest).getTime()
      const timestamp = new Date(Math.max(at.getTime(), latestTime + 1))
      const details = proposed.type === "SCHEDULED" && proposed.state_details.scheduled_time === null
        ? { ...proposed.state_details, scheduled_time: timestamp }
        : proposed.state_details
      const name = proposed.name ?? defaultStateName[proposed.type]
      const initial = row.state === null ? null : toState(row.state)
      const resuming = kind === "flow_run" ? ((policy as { resuming?: boolean | null }).resuming ?? false) : undefined
      // The clock's fields alone: the row is a run's forty-odd columns, copied by every spread.
      const clock: RunClock = {
        state_type: row.state_type,
        state_name: row.state_name,
        state_timestamp: row.state_timestamp,
        start_time: row.start_time,
        end_time: row.end_time,
        run_count: options.resetRunCount ? 0 : row.run_count,
        total_run_time: row.total_run_time,
        expected_start_time: row.expected_start_time,
        next_scheduled_start_time: row.next_scheduled_start_time,
        ...(resuming === undefined ? {} : { resuming })
      }
      const next = applyGlobalPolicy(
        kind,
        clock,
        initial === null ? null : toTransitionState(initial),
        { type: proposed.type, name, timestamp, scheduled_time: details.scheduled_time }
      )
      const finalPolicy = {
        ...(kind === "flow_run" ? { ...policy, resuming: next.resuming ?? resuming } : policy),
        ...options.policyAfter
      }
      const storedDetails = stateDetailsWire({ ...details, ...stateLinks(kind, row) })
      /** The state's row as a typed select list (it serves in VALUES and in INSERT … SELECT alike). */
      const stateValues = sql`${stateId}::uuid, ${at}::timestamptz, ${at}::timestamptz, ${row.id}::uuid, ${proposed.type}::text,
        ${name}::text, ${timestamp}::timestamptz, ${proposed.message}::text, ${JSON.stringify(proposed.data ?? null)}::jsonb,
        ${JSON.stringify(storedDetails)}::jsonb`
      const state = toState({
        id: stateId,
        type: proposed.type,
        name,
        timestamp,
        message: proposed.message,
        data: proposed.data,
        state_details: storedDetails
      })
      return {
        state,
        storedDetails,
        next,
        finalPolicy,
        stateValues,
        stateColumns: sql`id, created, updated, ${sql(t.fk)}, type, name, timestamp, message, data, state_details`
      }
    }

    /**
     * A new run's first state, planned before the run's row exists (a fresh run's clock); `links` are
     * the runs it belongs to (`id` is the new run's).
     */
    const planFirstState = traced("RunStatesRepo.planFirstState")(function* (
      kind: RunKind,
      links: RunLinks,
      proposed: RuleState,
      policy: object,
      at: Date
    ) {
      const fresh: RunStateRow = {
        ...links,
        state_id: null,
        empirical_policy: policy,
        state: null,
        state_type: null,
        state_name: null,
        state_timestamp: null,
        start_time: null,
        end_time: null,
        run_count: 0,
        total_run_time: 0,
        expected_start_time: null,
        next_scheduled_start_time: null
      }
      return planState(kind, fresh, proposed, policy, { at, latest: null, stateId: yield* newId })
    })

    /**
     * Stores `proposed` as the run's new state, as writeState does; with `version` (the row's xmin
     * when it was read) only if the row is still that version: undefined when it is not.
     */
    const storeState = traced("RunStatesRepo.writeState")(function* (
      kind: RunKind,
      row: RunStateRow,
      proposed: RuleState,
      policy: object,
      policyAfter: object = {},
      resetRunCount = false,
      version?: string,
      guard?: string
    ) {
      const t = tables[kind]
      const at = yield* now
      const latest = row.last_state_timestamp !== undefined
        ? row.last_state_timestamp
        : (yield* sql<{ latest: Date | null }>`
            SELECT max(timestamp) AS latest FROM ${sql(t.states)} WHERE ${sql(t.fk)} = ${row.id}
          `)[0]?.latest ?? null
      const plan = planState(kind, row, proposed, policy, { at, latest, stateId: yield* newId, policyAfter, resetRunCount })
      const next = plan.next
      const note = transitionNote(kind, row.id, next.run_count, row.state === null ? null : toState(row.state), plan.state)
      // A background task run (deferred) entering Scheduled waits for a task worker: queued with its
      // state (AwaitingRetry in the retry queue, served first), as the reference's EnqueueScheduledTasks.
      // A full queue (max_scheduled_queue_size, max_retry_queue_size per key) takes it later (a refill).
      const retry = plan.state.name === "AwaitingRetry"
      const queueSize = retry ? queueSizes.max_retry_queue_size : queueSizes.max_scheduled_queue_size
      // A background run leaving Scheduled leaves its queue (delivered or not).
      const background = kind === "task_run" && (row as { readonly flow_run_id?: string | null }).flow_run_id == null
      // The run's columns come first: with `version`, whether the row is still that version decides
      // whether anything is written (the UPDATE, taking the row's lock, reads its newest version).
      const updated = sql`
        UPDATE ${sql(t.run)} SET
          updated = ${at},
          state_id = ${plan.state.id},
          state_type = ${next.state_type},
          state_name = ${next.state_name},
          state_timestamp = ${next.state_timestamp},
          start_time = ${next.start_time},
          end_time = ${next.end_time},
          run_count = ${next.run_count},
          total_run_time = ${next.total_run_time},
          expected_start_time = ${next.expected_start_time},
          next_scheduled_start_time = ${next.next_scheduled_start_time},
          empirical_policy = ${JSON.stringify(plan.finalPolicy)}::jsonb
        WHERE id = ${row.id} ${version === undefined ? sql`` : sql`AND xmin = ${version}::xid`}
          ${version === undefined || guard === undefined ? sql`` : sql`AND ${sql.literal(guard)}`}
        RETURNING id, xmin::text AS row_version
      `
      const queued = !background
        ? sql``
        : plan.state.type === "SCHEDULED" && plan.state.state_details.deferred === true
        ? sql`, queued AS (
            INSERT INTO task_run_delivery (task_run_id, task_key, retry)
            SELECT r.id, r.task_key, ${retry} FROM task_run r JOIN run ON run.id = r.id
            WHERE (SELECT count(*) FROM task_run_delivery d WHERE d.task_key = r.task_key AND d.retry = ${retry}) < ${queueSize}
            ON CONFLICT (task_run_id) DO UPDATE SET retry = EXCLUDED.retry, claimed_until = NULL, delivered_at = NULL)`
        : sql`, dequeued AS (DELETE FROM task_run_delivery WHERE task_run_id IN (SELECT id FROM run))`
      // The state, its note in the event outbox and the run's columns in one statement: one round
      // trip on the hot path, and the transition's event is as durable as the state.
      const stored = yield* sql<{ stored: number; row_version: string | null }>`
        WITH run AS (${updated}),
          stored AS (INSERT INTO ${sql(t.states)} (${plan.stateColumns}) SELECT ${plan.stateValues} FROM run),
          noted AS (INSERT INTO event_outbox (body) SELECT ${JSON.stringify(note)}::jsonb FROM run)
          ${queued}
        SELECT count(*)::int AS stored, max(row_version) AS row_version FROM run
      `
      if (stored[0]!.stored === 0) return undefined
      return { state: plan.state, storedDetails: plan.storedDetails, next, finalPolicy: plan.finalPolicy, at, version: stored[0]!.row_version! }
    })

    /**
     * Stores `proposed` as the run's new state and applies the global bookkeeping; `policy` is the
     * run's policy after the transition. Runs inside the caller's transaction, whose lock on the
     * run's row it holds (or on a row it inserted).
     */
    const writeState = (
      kind: RunKind,
      row: RunStateRow,
      proposed: RuleState,
      policy: object,
      policyAfter: object = {},
      resetRunCount = false
    ) => Effect.map(storeState(kind, row, proposed, policy, policyAfter, resetRunCount), (stored) => stored!.state)

    /**
     * Publishes a transition once it is committed (with a flow run's work queue): inside a caller's
     * transaction, when that commits.
     */
    const published = (kind: RunKind, id: string, initial: State | null, validated: State, workQueueId: string | null = null) =>
      afterCommit(transitions.publish({ kind, run_id: id, initial_state: initial, validated_state: validated, work_queue_id: workQueueId }))

    /** The run's row with its current state and latest state timestamp (`lock`: FOR UPDATE; else with its version). */
    const readForTransition = <Row extends RunStateRow>(input: Pick<TransitionInput<Row, never>, "kind" | "id" | "columns">, lock: boolean) => {
      const t = tables[input.kind]
      return sql<Row & { readonly row_version?: string }>`
        SELECT r.*, ${lock ? sql`` : sql`r.xmin::text AS row_version,`}
          (SELECT to_jsonb(s.*) FROM ${sql(t.states)} s WHERE s.id = r.state_id) AS state,
          (SELECT max(timestamp) FROM ${sql(t.states)} WHERE ${sql(t.fk)} = r.id) AS last_state_timestamp
          ${input.columns === undefined ? sql`` : sql.literal(input.columns)}
        FROM ${sql(t.run)} r WHERE r.id = ${input.id}
        ${lock ? sql`FOR UPDATE OF r` : sql``}
      `
    }

    /**
     * Runs' rows as this process's last lock-free transition of each left them, with their version:
     * the next transition of the run starts from it instead of reading the row, and is stored only
     * if the row is still that version (else the row is read and the transition decided again).
     * Taken out when used; the oldest forgotten beyond RECENT_ROWS. Without the run's parameters,
     * context and job variables (undefined), which no transition reads (each may be hundreds of KiB).
     */
    const recentRows = new Map<string, RunStateRow & { readonly row_version: string }>()
    const remember = (row: RunStateRow & { readonly row_version: string }) => {
      // A copy with those three emptied (a spread: copying the row less them by a rest pattern took
      // ten times as long, a row being forty-odd columns).
      const kept = { ...row, parameters: undefined, context: undefined, job_variables: undefined }
      recentRows.set(row.id, kept)
      if (recentRows.size > RECENT_ROWS) recentRows.delete(recentRows.keys().next().value!)
    }

    /**
     * Keeps the row of a run just inserted in its first state by a statement that committed on its
     * own (with the row's `xmin` as `row_version`), as recentRows keeps a transition's: the run's
     * first transition then needs no read. In a caller's transaction nothing is kept (a later write
     * there keeps the version).
     */
    const keepCreated = (row: RunStateRow & { readonly row_version: string }) =>
      Effect.map(inOpenTransaction, (open) => {
        if (!open) remember({ ...row, last_state_timestamp: row.state === null ? null : row.state.timestamp })
      })

    /** What the policy (and `secure`) decide for `row`, and the state it is in. */
    const decide = <Row extends RunStateRow, Run extends RuleRunBase>(input: TransitionInput<Row, Run>, row: Row) =>
      Effect.gen(function* () {
        const at = yield* now
        const initial = row.state === null ? null : toState(row.state)
        // A state without a name is named after its type before any rule looks at it.
        const proposed: RuleState = { ...input.proposed, name: input.proposed.name ?? defaultStateName[input.proposed.type] }
        const ruleRun = yield* input.ruleRun(row, proposed)
        const decided = orchestrate(input.rules, { now: at, run: ruleRun, initial, proposed })
        const outcome = input.secure ? yield* input.secure(row, ruleRun, decided, initial) : decided
        return { initial, outcome }
      })

    /**
     * Decides and stores a transition: `version` stores it only if the row is still that version
     * (CHANGED when not), without it the caller holds the row's lock. `kept`: the row is one
     * recentRows kept, not read.
     */
    const decideAndStore = <Row extends RunStateRow, Run extends RuleRunBase>(
      input: TransitionInput<Row, Run>,
      row: Row,
      version?: string,
      kept = false
    ) =>
      Effect.gen(function* () {
        const { initial, outcome } = yield* decide(input, row)
        // A kept row may be older than the run (another process moved it on): a decision that
        // stores nothing is not checked against the row's version, so it is made from a read.
        if (kept && outcome.proposed === null) return CHANGED
        const stored = outcome.proposed === null
          ? null
          : yield* storeState(
            input.kind, row, outcome.proposed, outcome.policy, outcome.policyAfter, outcome.resetRunCount, version, input.lockFreeGuard
          )
        if (stored === undefined) return CHANGED
        const validated = stored === null ? initial : stored.state
        // Stored lock-free by a statement that committed on its own: the row is now exactly this, at
        // this version. In a caller's transaction a later write of that transaction keeps the version.
        if (stored !== null && version !== undefined && !(yield* inOpenTransaction)) {
          const next = stored.next
          remember({
            ...row,
            updated: stored.at,
            state_id: stored.state.id,
            state_type: next.state_type,
            state_name: next.state_name,
            state_timestamp: next.state_timestamp,
            start_time: next.start_time,
            end_time: next.end_time,
            run_count: next.run_count,
            total_run_time: next.total_run_time,
            expected_start_time: next.expected_start_time,
            next_scheduled_start_time: next.next_scheduled_start_time,
            // As the column reads back (JSON: no undefined fields).
            empirical_policy: JSON.parse(JSON.stringify(stored.finalPolicy)),
            state: { ...stored.state, timestamp: stored.state.timestamp.toISOString(), state_details: stored.storedDetails },
            last_state_timestamp: stored.state.timestamp,
            row_version: stored.version
          } as RunStateRow & { readonly row_version: string })
        }
        if (outcome.proposed !== null && validated !== null && input.afterStore) yield* input.afterStore(row, validated, initial)
        const queue = (row as { readonly work_queue_id?: string | null }).work_queue_id ?? null
        return { decision: outcome.decision, state: validated, initial, created: outcome.proposed !== null, queue }
      })

    /**
     * Proposes a state: the policy decides; an accepted (or replacement) state is stored. Two
     * proposals for one run are decided one after the other: under the run's row lock, held for the
     * whole transaction, or (`lockFree`) one of them finds the row changed when it stores its state
     * and is decided again under the lock. Undefined when there is no such run.
     */
    const transition = traced("RunStatesRepo.transition")(function* <Row extends RunStateRow, Run extends RuleRunBase>(
      input: TransitionInput<Row, Run>
    ) {
      const lockFree = input.lockFree
      const unlocked = lockFree === undefined ? CHANGED : yield* Effect.gen(function* () {
        const recent = recentRows.get(input.id) as (Row & { readonly row_version: string }) | undefined
        if (recent !== undefined) {
          recentRows.delete(input.id)
          // Another process (or any write) may have moved the run on since: then it is read as below.
          const kept = lockFree(recent) ? yield* decideAndStore(input, recent, recent.row_version, true) : CHANGED
          if (kept !== CHANGED) return kept
        }
        const read = yield* readForTransition<Row>(input, false)
        if (read.length === 0) return undefined
        const row = read[0]!
        return lockFree(row) ? yield* decideAndStore(input, row, row.row_version) : CHANGED
      })
      const result = unlocked !== CHANGED ? unlocked : yield* transaction(
        sql,
        Effect.gen(function* () {
          // Lock and read in one statement. Under READ COMMITTED, a read that waited for the lock
          // sees the run's newest columns but its subqueries see the statement's older snapshot:
          // then the current state is missing, and the row is read again in a new statement.
          const locked = yield* readForTransition<Row>(input, true)
          if (locked.length === 0) return undefined
          const first = locked[0]!
          const row = first.state_id !== null && first.state?.id !== first.state_id
            ? { ...first, ...(yield* readRow<Row>(input.kind, input.id))!, last_state_timestamp: undefined }
            : first
          const stored = yield* decideAndStore(input, row)
          // Under the lock the row cannot have changed.
          return stored === CHANGED ? undefined : stored
        })
      )
      if (result === undefined) return undefined
      if (result.created && result.state !== null) yield* published(input.kind, input.id, result.initial, result.state, result.queue)
      return { status: result.decision.status, details: result.decision.details, state: result.state, created: result.created }
    })

    const readState = (kind: RunKind, stateId: string) =>
      Effect.map(
        sql<StateRow>`SELECT * FROM ${sql(tables[kind].states)} WHERE id = ${stateId}`,
        (rows) => (rows[0] === undefined ? undefined : toState(rows[0]))
      )

    /** A run's states, oldest first. */
    const readStates = (kind: RunKind, runId: string) =>
      Effect.map(
        sql<StateRow>`SELECT * FROM ${sql(tables[kind].states)} WHERE ${sql(tables[kind].fk)} = ${runId} ORDER BY timestamp`,
        (rows) => rows.map(toState)
      )

    /** Seconds a run has run, counting its current Running stretch (the reference's estimated_run_time). */
    const estimatedRunTime = (table: string, at: Date) =>
      sql`(${sql(table)}.total_run_time + CASE WHEN ${sql(table)}.state_type = 'RUNNING' AND ${sql(table)}.state_timestamp IS NOT NULL
        THEN GREATEST(0, EXTRACT(EPOCH FROM (${at}::timestamptz - ${sql(table)}.state_timestamp))) ELSE 0 END)`

    /** Seconds a run started (or, not started yet, is) late (the reference's estimated_start_time_delta). */
    const estimatedLateness = (table: string, at: Date) =>
      sql`(CASE
        WHEN ${sql(table)}.start_time IS NOT NULL AND ${sql(table)}.start_time > ${sql(table)}.expected_start_time
          THEN EXTRACT(EPOCH FROM (${sql(table)}.start_time - ${sql(table)}.expected_start_time))
        WHEN ${sql(table)}.start_time IS NULL AND ${sql(table)}.expected_start_time < ${at}::timestamptz
          AND (${sql(table)}.state_type IS NULL OR ${sql(table)}.state_type NOT IN ('COMPLETED', 'FAILED', 'CANCELLED', 'CRASHED'))
          THEN EXTRACT(EPOCH FROM (${at}::timestamptz - ${sql(table)}.expected_start_time))
        ELSE 0 END)`

    /**
     * Runs matching `where`, counted per interval of expected start time and per current state, as
     * the reference's history: at most 500 buckets from `start`, each `interval` seconds long.
     */
    const history = traced("RunStatesRepo.history")(function* (
      kind: RunKind,
      where: ReturnType<typeof sql.and>,
      options: HistoryWindow
    ) {
      const table = tables[kind].run
      const at = yield* now
      const { buckets, until, intervalStart, intervalEnd } = historyBuckets(options)
      const rows = yield* sql<{
        bucket: number
        state_type: StateType
        state_name: string
        count_runs: string
        sum_estimated_run_time: number
        sum_estimated_lateness: number
      }>`
        SELECT
          floor(EXTRACT(EPOCH FROM (${sql(table)}.expected_start_time - ${options.start}::timestamptz)) / ${options.intervalSeconds})::int AS bucket,
          ${sql(table)}.state_type, ${sql(table)}.state_name,
          count(*) AS count_runs,
          sum(GREATEST(0, ${estimatedRunTime(table, at)}))::float8 AS sum_estimated_run_time,
          sum(GREATEST(0, ${estimatedLateness(table, at)}))::float8 AS sum_estimated_lateness
        FROM ${sql(table)}
        WHERE ${where}
          AND ${sql(table)}.expected_start_time >= ${options.start} AND ${sql(table)}.expected_start_time < ${until}
          AND ${sql(table)}.state_type IS NOT NULL
        GROUP BY 1, 2, 3
      `
      return Array.from({ length: buckets }, (_, i) => ({
        interval_start: intervalStart(i),
        interval_end: intervalEnd(i),
        states: rows
          .filter((r) => r.bucket === i)
          .map((r) => ({
            state_type: r.state_type,
            state_name: r.state_name,
            count_runs: Number(r.count_runs),
            sum_estimated_run_time: r.sum_estimated_run_time,
            sum_estimated_lateness: r.sum_estimated_lateness
          }))
      }))
    })

    return {
      ...sqlErrorsAsDefects({ writeState, readState, readStates, history }),
      readRow: <Row extends RunStateRow>(kind: RunKind, id: string) => sqlErrorAsDefect(readRow<Row>(kind, id)),
      transition: <Row extends RunStateRow, Run extends RuleRunBase>(input: TransitionInput<Row, Run>) =>
        sqlErrorAsDefect(transition<Row, Run>(input)),
      planFirstState,
      keepCreated,
      published,
      // A fragment other statements embed, not a statement of its own.
      estimatedLateness
    } as const
  }),
  dependencies: [Transitions.Default]
}) {}
