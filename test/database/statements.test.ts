import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Cause, Effect, Exit, Option } from "effect"
import { checkStatement, isTooManyParameters, MAX_STATEMENT_PARAMETERS } from "../../src/database/statements.ts"
import { ok } from "../support/api.ts"
import { type LogLine, loggedServer } from "../support/logs.ts"
import { EventPersister } from "../../src/events/persister.ts"
import { request } from "../support/server.ts"
import { ProbedApi, ProbedHandlers } from "../http/probe.ts"

const names = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`)

describe("statements with more parameters than PostgreSQL takes", () => {
  const lines: Array<LogLine> = []
  it.layer(loggedServer(lines, { "server.database.echo": false }, undefined, { api: ProbedApi, handlers: ProbedHandlers }), { timeout: 120_000 })((it) => {
    it.effect("are refused before they are sent: 422, not a 503 clients would retry, and the server goes on", () =>
      Effect.gen(function* () {
        const answer = yield* request("GET", "/probe/parameters?n=70000")
        expect(answer.status).toBe(422)
        expect(answer.headers.get("retry-after")).toBe(null)
        expect(answer.body.detail).toEqual([{
          loc: ["body"],
          type: "value_error",
          msg: `The request holds too many values for one database statement: it needs 70000 parameters, and PostgreSQL takes at most ${MAX_STATEMENT_PARAMETERS}. Send fewer values (shorter lists in the filter), or split the request.`
        }])
        expect(ok(yield* request("GET", "/probe/parameters?n=100"), 200)).toBe(1)
        expect((yield* request("GET", "/health")).status).toBe(200)
        // Nothing was logged as an outage or a failure.
        expect(lines.filter((line) => line.level === "ERROR" || line.level === "WARN").map((line) => line.message)).toEqual([])
      })
    )

    it.effect("filters send each list as one array parameter, however long: 70,000 ids, prefixes or patterns answer 200", () =>
      Effect.gen(function* () {
        const ids = Array.from({ length: 70_000 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`)
        expect(ok(yield* request("POST", "/flow_runs/filter", { body: { flow_runs: { id: { any_: ids } } } }), 200)).toEqual([])
        expect(ok(yield* request("POST", "/work_queues/filter", { body: { work_queues: { name: { startswith_: names(70_000, "q") } } } }), 200)).toEqual([])
        // An event filter with 70,000 values in each of its lists finds the one event they name.
        const occurred = "2026-06-01T00:00:00.000Z"
        const event = { id: "aaaaaaaa-0000-4000-8000-000000000001", occurred, event: "long.lists.matched", resource: { "prefect.resource.id": "res.long-lists", "label": "value-69999" }, related: [] }
        expect((yield* request("POST", "/events", { body: [event] })).status).toBe(204)
        yield* Effect.flatMap(EventPersister, (persister) => persister.drain)
        const filter = {
          event: { prefix: [...names(69_999, "e"), "long.lists"], exclude_prefix: names(70_000, "x") },
          resource: { id_prefix: [...names(69_999, "r"), "res.long"], labels: { label: names(70_000, "value-") } },
          any_resource: { id_prefix: [...names(69_999, "a"), "res."] },
          related: { resources_in_roles: Array.from({ length: 70_000 }, (_, i) => [`id${i}`, "role"]) },
          occurred: { since: "2026-05-31T00:00:00Z", until: "2026-06-02T00:00:00Z" }
        }
        // No related resource: the related criterion leaves the event out; without it, it is found.
        expect(ok(yield* request("POST", "/events/filter", { body: { filter } }), 200).events).toEqual([])
        const { related: _, ...withoutRelated } = filter
        expect(ok(yield* request("POST", "/events/filter", { body: { filter: withoutRelated } }), 200).events.map((e) => e.id)).toEqual([event.id])
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
