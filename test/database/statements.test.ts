import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Cause, Effect, Exit, Option } from "effect"
import { checkStatement, isTooManyParameters, MAX_STATEMENT_PARAMETERS } from "../../src/database/statements.ts"
import { ok } from "../support/api.ts"
import { type LogLine, loggedServer } from "../support/logs.ts"
import { request } from "../support/server.ts"

const names = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`)

describe("statements with more parameters than PostgreSQL takes", () => {
  const lines: Array<LogLine> = []
  it.layer(loggedServer(lines, { "server.database.echo": false }), { timeout: 120_000 })((it) => {
    it.effect("are refused before they are sent: 422, not a 503 clients would retry, and the server goes on", () =>
      Effect.gen(function* () {
        // Each prefix of an event filter is a parameter, and the window's bounds are four more.
        const filter = { event: { prefix: names(30_000, "e") }, resource: { id_prefix: names(30_000, "r") }, any_resource: { id_prefix: names(10_000, "a") } }
        const answer = yield* request("POST", "/events/filter", { body: { filter } })
        expect(answer.status).toBe(422)
        expect(answer.headers.get("retry-after")).toBe(null)
        expect(answer.body.detail).toHaveLength(1)
        expect(answer.body.detail[0]).toMatchObject({ loc: ["body"], type: "value_error" })
        expect(answer.body.detail[0].msg).toMatch(
          new RegExp(`^The request holds too many values for one database statement: it needs 700\\d\\d parameters, and PostgreSQL takes at most ${MAX_STATEMENT_PARAMETERS}\\.`)
        )
        // Lists sent as one array parameter have no such limit.
        const ids = Array.from({ length: 70_000 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`)
        expect(ok(yield* request("POST", "/flow_runs/filter", { body: { flow_runs: { id: { any_: ids } } } }), 200)).toEqual([])
        expect(ok(yield* request("POST", "/work_queues/filter", { body: { work_queues: { name: { startswith_: names(70_000, "q") } } } }), 200)).toEqual([])
        expect((yield* request("GET", "/health")).status).toBe(200)
        expect(ok(yield* request("POST", "/flows/filter", { body: {} }), 200)).toEqual([])
        // Nothing was logged as an outage or a failure.
        expect(lines.filter((line) => line.level === "ERROR" || line.level === "WARN").map((line) => line.message)).toEqual([])
      })
    )

    it.effect("are told apart at the limit: 65,535 parameters go, 65,536 do not", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const statement = (n: number) => sql`SELECT 1 WHERE 0 IN ${sql.in(Array.from({ length: n }, (_, i) => i))}`
        const outcome = (n: number) => Effect.exit(checkStatement(statement(n), { echo: false }))
        expect(Exit.isSuccess(yield* outcome(MAX_STATEMENT_PARAMETERS))).toBe(true)
        const over = yield* outcome(MAX_STATEMENT_PARAMETERS + 1)
        expect(Exit.isFailure(over) && Cause.dieOption(over.cause).pipe(Option.exists(isTooManyParameters))).toBe(true)
      })
    )

    it.effect("with server.database.echo off, no statement is logged", () =>
      Effect.gen(function* () {
        ok(yield* request("POST", "/flows/", { body: { name: "not-echoed" } }))
        expect(lines.filter((line) => line.message.startsWith("SQL:"))).toEqual([])
      })
    )
  })
})

