/**
 * server.database.echo on (off: test/database/statements.test.ts). A file of its own: the layers a
 * test server is made of are shared by the servers of one file.
 */
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { checkStatement, ECHO_MAX_CHARACTERS } from "../../src/database/statements.ts"
import { ok } from "../support/api.ts"
import { type LogLine, loggedServer } from "../support/logs.ts"
import { request } from "../support/server.ts"

describe("server.database.echo", () => {
  const lines: Array<LogLine> = []
  it.layer(loggedServer(lines, { "server.database.echo": true }), { timeout: 60_000 })((it) => {
    it.effect("logs every statement's text at INFO (even below the log level), without its parameters", () =>
      Effect.gen(function* () {
        const secret = "echo-parameter-value-7f3a"
        ok(yield* request("POST", "/flows/", { body: { name: secret } }))
        const statements = lines.filter((line) => line.message.startsWith("SQL:"))
        const insert = statements.find((line) => /INSERT INTO flow\b/.test(line.message))
        expect(insert).toBeDefined()
        expect(insert!.level).toBe("INFO")
        expect(insert!.message).toMatch(/\$1/)
        expect(insert!.annotations.parameters).toEqual(expect.any(Number))
        expect(lines.filter((line) => line.message.includes(secret))).toEqual([])
        // A long statement is cut.
        const sql = yield* SqlClient.SqlClient
        yield* checkStatement(sql`SELECT ${sql.unsafe(Array.from({ length: 2_000 }, (_, i) => `${i} AS c${i}`).join(", "))}`, { echo: true })
        const long = lines.at(-1)!
        expect(long.message.startsWith(`SQL: SELECT 0 AS c0, 1 AS c1`)).toBe(true)
        expect(long.message.length).toBeLessThan(ECHO_MAX_CHARACTERS + 100)
        expect(long.message).toMatch(/… \(\d+ more characters\)$/)
        expect((yield* request("GET", "/health")).status).toBe(200)
      })
    )
  })
})
