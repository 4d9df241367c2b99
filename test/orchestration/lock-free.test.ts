/**
 * A transition of a run that holds no concurrency slot is decided without a transaction and stored
 * only if the run's row is the version it read; when the row changed in between, the transition is
 * decided again under the row's lock, from the newest row. Runs whose transitions can take or give
 * back a slot are decided under the lock from the start.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { flowHoldsNoSlots } from "../../src/concurrency/rules.ts"
import { StateCreate } from "../../src/domain/states.ts"
import { decodePolicy } from "../../src/flow-runs/wire.ts"
import { coreFlowPolicy } from "../../src/orchestration/flow-policy.ts"
import { RunStatesRepo, type RunStateRow } from "../../src/orchestration/repo.ts"
import { idOf, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const pending = Schema.decodeUnknownSync(StateCreate)({ type: "PENDING" })

const scheduledRun = (name: string) =>
  Effect.gen(function* () {
    const flowId = yield* makeFlow(name)
    return idOf(ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, state: { type: "SCHEDULED" } } }), 201))
  })

/** Proposes Pending to `id` through the core policy, lock-free, the rules seeing the run as `ruleRun` makes it. */
const proposePending = <Row extends RunStateRow>(id: string, ruleRun: (row: Row) => Effect.Effect<unknown>) =>
  Effect.flatMap(RunStatesRepo, (repo) =>
    repo.transition({ kind: "flow_run", id, proposed: pending, rules: coreFlowPolicy, lockFree: () => true, ruleRun: ruleRun as never })
  )

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
