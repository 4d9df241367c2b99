/**
 * A transition of a run that holds no concurrency slot is decided without a transaction and stored
 * only if the run's row is the version it read; when the row changed in between, the transition is
 * decided again under the row's lock, from the newest row. Runs whose transitions can take or give
 * back a slot are decided under the lock from the start.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { deploymentConcurrencyColumn, deploymentStillWithoutLimit, flowHoldsNoSlots } from "../../src/concurrency/rules.ts"
import { StateCreate } from "../../src/domain/states.ts"
import { FlowRunsRepo } from "../../src/flow-runs/repo.ts"
import { decodePolicy } from "../../src/flow-runs/wire.ts"
import { coreFlowPolicy } from "../../src/orchestration/flow-policy.ts"
import { RunStatesRepo, type RunStateRow, toState } from "../../src/orchestration/repo.ts"
import { idOf, makeDeployment, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const pending = Schema.decodeUnknownSync(StateCreate)({ type: "PENDING" })
const running = Schema.decodeUnknownSync(StateCreate)({ type: "RUNNING" })

const scheduledRun = (name: string) =>
  Effect.gen(function* () {
    const flowId = yield* makeFlow(name)
    return idOf(ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "SCHEDULED" } } }), 201))
  })

/** Proposes `proposed` to `id` through the core policy, lock-free, the rules seeing the run as `ruleRun` makes it. */
const propose = <Row extends RunStateRow>(proposed: StateCreate, id: string, ruleRun: (row: Row) => Effect.Effect<unknown>) =>
  Effect.flatMap(RunStatesRepo, (repo) =>
    repo.transition({ kind: "flow_run", id, proposed, rules: coreFlowPolicy, lockFree: () => true, ruleRun: ruleRun as never })
  )
const proposePending = <Row extends RunStateRow>(id: string, ruleRun: (row: Row) => Effect.Effect<unknown>) =>
  propose(pending, id, ruleRun)

/** Proposes Running to `id` as `propose` does; with the run's tags as each decision saw them. */
const proposeRunningSeeingTags = (id: string) =>
  Effect.gen(function* () {
    const seen: Array<unknown> = []
    const result = yield* propose(running, id, (row: RunStateRow & { readonly tags?: unknown }) =>
      Effect.sync(() => {
        seen.push(row.tags)
        return asRuleRun(row)
      }))
    return { result, seen }
  })

/** What the rules read of a run's row, as the transition's read gives it. */
const ruleFacts = (row: RunStateRow & Record<string, unknown>) => ({
  id: row.id,
  state_id: row.state_id,
  state_type: row.state_type,
  state_name: row.state_name,
  state_timestamp: row.state_timestamp,
  start_time: row.start_time,
  end_time: row.end_time,
  run_count: row.run_count,
  total_run_time: row.total_run_time,
  expected_start_time: row.expected_start_time,
  next_scheduled_start_time: row.next_scheduled_start_time,
  updated: row.updated,
  tags: row.tags,
  empirical_policy: row.empirical_policy,
  state: row.state === null ? null : toState(row.state),
  last_state_timestamp: new Date(row.last_state_timestamp as string).getTime(),
  row_version: row.row_version
})

/** The run as the flow rules see it. */
const asRuleRun = (row: RunStateRow) => ({ ...row, empirical_policy: decodePolicy(row.empirical_policy ?? {}) })

describe("transitions without the lock", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("a run changed between the read and the store is decided again from its newest row, and stored once", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const id = yield* scheduledRun("lock-free-changed")
        const seen: Array<{ readonly state: string | null; readonly tags: unknown }> = []
        const result = yield* proposePending(id, (row: RunStateRow & { readonly tags?: unknown }) =>
          Effect.gen(function* () {
            seen.push({ state: row.state_type, tags: row.tags })
            // Another writer changes the run while the first decision is made.
            if (seen.length === 1) yield* sql`UPDATE flow_run SET tags = '["changed"]'::jsonb WHERE id = ${id}`.pipe(Effect.orDie)
            return asRuleRun(row)
          }))
        expect(result?.status).toBe("ACCEPT")
        // Decided twice: the second time from the row the other writer left.
        expect(seen).toEqual([{ state: "SCHEDULED", tags: [] }, { state: "SCHEDULED", tags: ["changed"] }])
        const states = ok(yield* request("GET", `/flow_run_states/?flow_run_id=${id}`), 200) as unknown as Array<{ type: string }>
        expect(states.map((s) => s.type)).toEqual(["SCHEDULED", "PENDING"])
        const run = ok(yield* request("GET", `/flow_runs/${id}`), 200)
        expect(run.state_type).toBe("PENDING")
        expect(run.tags).toEqual(["changed"])
      })
    )

    it.effect("the next transition of a run starts from the row its last one stored, as a read would give it", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const id = yield* scheduledRun("lock-free-kept")
        expect((yield* proposePending(id, (row: RunStateRow) => Effect.succeed(asRuleRun(row))))?.status).toBe("ACCEPT")
        // The row as a transition's read gives it, read in between (a read leaves its version as it is).
        const [before] = yield* sql<RunStateRow & Record<string, unknown>>`
          SELECT r.*, r.xmin::text AS row_version, (SELECT to_jsonb(s.*) FROM flow_run_state s WHERE s.id = r.state_id) AS state,
            (SELECT max(timestamp) FROM flow_run_state WHERE flow_run_id = r.id) AS last_state_timestamp
          FROM flow_run r WHERE r.id = ${id}
        `.pipe(Effect.orDie)
        const given: Array<RunStateRow & Record<string, unknown>> = []
        const result = yield* propose(running, id, (row: RunStateRow & Record<string, unknown>) =>
          Effect.sync(() => {
            given.push(row)
            return asRuleRun(row)
          }))
        expect(result?.status).toBe("ACCEPT")
        // Decided once: the row kept was the run's version.
        expect(given).toHaveLength(1)
        // Kept by the process, not read: a read's state carries its row's own columns too.
        expect(given[0]!.state).not.toHaveProperty("flow_run_id")
        expect(ruleFacts(given[0]!)).toEqual(ruleFacts(before!))
        expect(before!.state_type).toBe("PENDING")
      })
    )

    it.effect("a run's first transition starts from the row its create stored, as a read would give it", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const flowId = yield* makeFlow("lock-free-created")
        const dep = yield* makeDeployment({ name: "created-kept", flow_id: flowId, parameters: { size: 3 } })
        const created = [
          idOf(ok(yield* request("POST", `/deployments/${dep.id}/create_flow_run`, { body: { parameters: { size: 4 } } }), 201)),
          idOf(ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, parameters: { size: 5 }, state: { type: "SCHEDULED" } } }), 201))
        ]
        for (const id of created) {
          const [before] = yield* sql<RunStateRow & Record<string, unknown>>`
            SELECT r.*, r.xmin::text AS row_version, (SELECT to_jsonb(s.*) FROM flow_run_state s WHERE s.id = r.state_id) AS state,
              (SELECT max(timestamp) FROM flow_run_state WHERE flow_run_id = r.id) AS last_state_timestamp
              ${sql.literal(deploymentConcurrencyColumn)}
            FROM flow_run r WHERE r.id = ${id}
          `.pipe(Effect.orDie)
          const given: Array<RunStateRow & Record<string, unknown>> = []
          const result = yield* Effect.flatMap(RunStatesRepo, (repo) =>
            repo.transition({
              kind: "flow_run",
              id,
              proposed: pending,
              rules: coreFlowPolicy,
              columns: deploymentConcurrencyColumn,
              lockFree: flowHoldsNoSlots as never,
              lockFreeGuard: deploymentStillWithoutLimit,
              ruleRun: ((row: RunStateRow & Record<string, unknown>) =>
                Effect.sync(() => {
                  given.push(row)
                  return asRuleRun(row)
                })) as never
            }))
          expect(result?.status).toBe("ACCEPT")
          // Decided once, from the row the create kept: a read's row carries the run's parameters too.
          expect(given).toHaveLength(1)
          expect(given[0]!.parameters).toBeUndefined()
          expect(before!.parameters).toBeDefined()
          expect(ruleFacts(given[0]!)).toEqual(ruleFacts(before!))
          expect(given[0]!.deployment_concurrency).toEqual(before!.deployment_concurrency)
        }
      })
    )

    it.effect("a create in a caller's transaction keeps no row: a later write of that transaction keeps the version", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const runs = yield* FlowRunsRepo
        const flowId = yield* makeFlow("lock-free-create-in-transaction")
        const id = yield* sql.withTransaction(Effect.gen(function* () {
          const made = yield* runs.create({
            flow_id: flowId, name: "made-in-transaction", flow_version: null, parameters: {}, context: {},
            parent_task_run_id: null, infrastructure_document_id: null, empirical_policy: decodePolicy({}), tags: [],
            labels: {}, idempotency_key: null, work_queue_name: null, job_variables: null, deployment_id: null,
            state: Schema.decodeUnknownSync(StateCreate)({ type: "SCHEDULED" })
          })
          yield* sql`UPDATE flow_run SET tags = '["in-transaction"]'::jsonb WHERE id = ${made.id}`
          return made.id
        })).pipe(Effect.orDie)
        const seen: Array<unknown> = []
        const result = yield* proposePending(id, (row: RunStateRow & { readonly tags?: unknown }) =>
          Effect.sync(() => {
            seen.push(row.tags)
            return asRuleRun(row)
          }))
        expect(result?.status).toBe("ACCEPT")
        // Decided once, from the row as the transaction left it.
        expect(seen).toEqual([["in-transaction"]])
      })
    )

    it.effect("a run another writer changed after its last transition is decided again from its newest row", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const id = yield* scheduledRun("lock-free-kept-changed")
        expect((yield* proposePending(id, (row: RunStateRow) => Effect.succeed(asRuleRun(row))))?.status).toBe("ACCEPT")
        yield* sql`UPDATE flow_run SET tags = '["later"]'::jsonb WHERE id = ${id}`.pipe(Effect.orDie)
        const { result, seen } = yield* proposeRunningSeeingTags(id)
        expect(result?.status).toBe("ACCEPT")
        // The row kept is stale: its store finds another version and the run is read again.
        expect(seen).toEqual([[], ["later"]])
        const run = ok(yield* request("GET", `/flow_runs/${id}`), 200)
        expect(run).toMatchObject({ state_type: "RUNNING", tags: ["later"], run_count: 1 })
        const states = ok(yield* request("GET", `/flow_run_states/?flow_run_id=${id}`), 200) as unknown as Array<{ type: string }>
        expect(states.map((s) => s.type)).toEqual(["SCHEDULED", "PENDING", "RUNNING"])
      })
    )

    it.effect("a decision that stores nothing is not made from a kept row another writer has moved on", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const id = yield* scheduledRun("lock-free-kept-stale-refusal")
        const completed = Schema.decodeUnknownSync(StateCreate)({ type: "COMPLETED" })
        expect((yield* propose(completed, id, (row: RunStateRow) => Effect.succeed(asRuleRun(row))))?.status).toBe("ACCEPT")
        // Another process schedules the run again (the process still keeps it Completed).
        const stateId = crypto.randomUUID()
        yield* sql`
          WITH stored AS (
            INSERT INTO flow_run_state (id, created, updated, flow_run_id, type, name, timestamp, state_details)
            VALUES (${stateId}, now(), now(), ${id}, 'SCHEDULED', 'Scheduled', now() + interval '1 second', '{}'::jsonb)
          )
          UPDATE flow_run SET state_id = ${stateId}, state_type = 'SCHEDULED', state_name = 'Scheduled' WHERE id = ${id}
        `.pipe(Effect.orDie)
        const seen: Array<string | null> = []
        const cancelling = Schema.decodeUnknownSync(StateCreate)({ type: "CANCELLING" })
        const result = yield* propose(cancelling, id, (row: RunStateRow) =>
          Effect.sync(() => {
            seen.push(row.state_type)
            return asRuleRun(row)
          }))
        // From the kept row it aborts (already in a terminal state); the Scheduled run, never started,
        // is cancelled at once instead.
        expect(seen).toEqual(["COMPLETED", "SCHEDULED"])
        expect({ status: result?.status, state: result?.state?.type }).toEqual({ status: "REJECT", state: "CANCELLED" })
        expect(ok(yield* request("GET", `/flow_runs/${id}`), 200).state_type).toBe("CANCELLED")
      })
    )

    it.effect("a transition in a caller's transaction keeps no row: a later write of that transaction keeps the version", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const id = yield* scheduledRun("lock-free-in-transaction")
        yield* sql.withTransaction(Effect.gen(function* () {
          expect((yield* proposePending(id, (row: RunStateRow) => Effect.succeed(asRuleRun(row))))?.status).toBe("ACCEPT")
          yield* sql`UPDATE flow_run SET tags = '["in-transaction"]'::jsonb WHERE id = ${id}`
        })).pipe(Effect.orDie)
        const { result, seen } = yield* proposeRunningSeeingTags(id)
        expect(result?.status).toBe("ACCEPT")
        // Decided once, from the row as the transaction left it.
        expect(seen).toEqual([["in-transaction"]])
      })
    )

    it.effect("a deployment given a concurrency limit after a run's transition: the run's next transition needs a slot", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("lock-free-limit-later")
        const dep = yield* makeDeployment({ name: "later-limit", flow_id: flowId })
        const runOf = Effect.map(request("POST", `/deployments/${dep.id}/create_flow_run`, { body: {} }), (res) => idOf(ok(res, 201)))
        const setState = (run: string, type: string) =>
          Effect.map(request("POST", `/flow_runs/${run}/set_state`, { body: { state: { type } } }), (res) => ok(res, 200, 201))
        const first = yield* runOf
        // Scheduled again (lock-free: no limit yet), so the process keeps its row.
        expect((yield* setState(first, "SCHEDULED")).status).toBe("ACCEPT")
        ok(yield* request("PATCH", `/deployments/${dep.id}`, { body: { concurrency_limit: 1 } }), 204)
        const second = yield* runOf
        expect((yield* setState(second, "PENDING")).status).toBe("ACCEPT")
        // The only slot is the second run's: the first, kept from before the limit, must wait for one.
        const refused = yield* setState(first, "PENDING")
        expect(refused.status).toBe("REJECT")
        expect(refused.state).toMatchObject({ type: "SCHEDULED", name: "AwaitingConcurrencySlot" })
      })
    )

    it.effect("a run left alone is stored from its first decision", () =>
      Effect.gen(function* () {
        const id = yield* scheduledRun("lock-free-alone")
        let decisions = 0
        const result = yield* proposePending(id, (row: RunStateRow) =>
          Effect.sync(() => {
            decisions++
            return asRuleRun(row)
          }))
        expect(result?.status).toBe("ACCEPT")
        expect(decisions).toBe(1)
        expect(ok(yield* request("GET", `/flow_runs/${id}`), 200).state_type).toBe("PENDING")
        // No run: nothing decided.
        const missing = yield* proposePending(crypto.randomUUID(), () => Effect.die("no run to decide for"))
        expect(missing).toBeUndefined()
      })
    )
  })

  it("only runs that can neither take nor give back a deployment slot go without the lock", () => {
    const noLimit = { concurrency_limit_id: null, concurrency_options: null }
    const limited = { concurrency_limit_id: crypto.randomUUID(), concurrency_options: null }
    const state = (lease: string | null) => ({ state_details: { deployment_concurrency_lease_id: lease } })
    expect(flowHoldsNoSlots({ deployment_id: null, state: state("lease") })).toBe(true)
    expect(flowHoldsNoSlots({ deployment_id: "d", deployment_concurrency: noLimit, state: state(null) })).toBe(true)
    expect(flowHoldsNoSlots({ deployment_id: "d", deployment_concurrency: noLimit, state: null })).toBe(true)
    // A lease to give back, a limit to take a slot of, or a deployment not read with the run.
    expect(flowHoldsNoSlots({ deployment_id: "d", deployment_concurrency: noLimit, state: state("lease") })).toBe(false)
    expect(flowHoldsNoSlots({ deployment_id: "d", deployment_concurrency: limited, state: state(null) })).toBe(false)
    expect(flowHoldsNoSlots({ deployment_id: "d", deployment_concurrency: null, state: state(null) })).toBe(false)
  })
})
