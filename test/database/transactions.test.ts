import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Option, Queue, Schema } from "effect"
import { DeploymentRuns } from "../../src/deployments/runs.ts"
import { DeploymentFlowRunCreate } from "../../src/deployments/schemas.ts"
import { afterCommit, transaction } from "../../src/database/transactions.ts"
import { Transitions } from "../../src/orchestration/transitions.ts"
import { idOf, makeDeployment, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

/** Whether the fiber is inside a transaction now. */
const inTransactionNow = Effect.map(Effect.serviceOption(SqlClient.TransactionConnection), Option.isSome)

const flowCount = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ n: number }>`SELECT count(*)::int AS n FROM flow WHERE name = ${name}`, (rows) => rows[0]!.n))

const insertFlow = (name: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`INSERT INTO flow (id, created, updated, name) VALUES (gen_random_uuid(), now(), now(), ${name})`)

describe("what a transaction announces waits for its commit", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("runs after the commit, outside the transaction, seeing what it wrote", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const seen: Array<string> = []
        yield* transaction(sql, Effect.gen(function* () {
          yield* insertFlow("after-commit")
          yield* afterCommit(Effect.gen(function* () {
            seen.push(`queued: inside a transaction ${yield* inTransactionNow}, flows ${yield* flowCount("after-commit")}`)
          }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie))
          seen.push("body done")
        }))
        expect(seen).toEqual(["body done", "queued: inside a transaction false, flows 1"])
      }))

    it.effect("waits for the outermost transaction, and is dropped when it rolls back", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const seen: Array<string> = []
        yield* transaction(sql, Effect.gen(function* () {
          yield* transaction(sql, afterCommit(Effect.sync(() => void seen.push("inner's"))))
          seen.push("inner committed")
        }))
        expect(seen).toEqual(["inner committed", "inner's"])

        const rolledBack = yield* Effect.exit(transaction(sql, Effect.gen(function* () {
          yield* insertFlow("rolled-back")
          yield* afterCommit(Effect.sync(() => void seen.push("rolled back's")))
          return yield* Effect.fail("no")
        })))
        expect(Exit.isFailure(rolledBack)).toBe(true)
        expect(seen).toEqual(["inner committed", "inner's"])
        expect(yield* flowCount("rolled-back")).toBe(0)
      }))

    it.effect("runs at once outside a transaction", () =>
      Effect.gen(function* () {
        const seen: Array<string> = []
        yield* afterCommit(Effect.sync(() => void seen.push("now")))
        expect(seen).toEqual(["now"])
      }))

    it.scoped("a run created from a deployment is published once another connection can read it", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const flowId = yield* makeFlow("published-after-commit")
        const deployment = yield* makeDeployment({ name: "published", flow_id: flowId })
        const subscription = yield* (yield* Transitions).subscribe
        // Reads the run the moment its first transition is published (another pooled connection on
        // PostgreSQL; the creating transaction's own once it is free on the embedded one).
        const reader = yield* Effect.fork(Effect.gen(function* () {
          const transition = yield* Queue.take(subscription)
          const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM flow_run WHERE id = ${transition.run_id}`
          return { id: transition.run_id, visible: rows[0]!.n }
        }))
        const run = ok(yield* request("POST", `/deployments/${deployment.id}/create_flow_run`, { body: {} }), 201)
        expect(yield* Fiber.join(reader)).toEqual({ id: idOf(run), visible: 1 })
      }))

    it.scoped("a run created inside a caller's transaction is published when that transaction commits", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const flowId = yield* makeFlow("published-with-outer")
        const deployment = yield* makeDeployment({ name: "outer", flow_id: flowId })
        const subscription = yield* (yield* Transitions).subscribe
        const runs = yield* DeploymentRuns
        const body = Schema.decodeUnknownSync(DeploymentFlowRunCreate)({})
        const publishedInside = yield* transaction(sql, Effect.gen(function* () {
          yield* runs.createFlowRun(deployment.id, body)
          return yield* Queue.size(subscription)
        }))
        expect(publishedInside).toBe(0)
        expect((yield* Queue.takeAll(subscription)).pipe((all) => [...all].map((t) => t.validated_state.type))).toEqual(["SCHEDULED"])
      }))
  })
})
