import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { parseTextQuery } from "../../src/domain/text-search.ts"
import { makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"
import { connect, opened } from "../support/websocket.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"
const FLOW_RUN = "11111111-1111-4111-8111-111111111111"
const TASK_RUN = "22222222-2222-4222-8222-222222222222"

const post = (logs: Array<Record<string, unknown>>) => request("POST", "/logs/", { body: logs })
const read = (body: Record<string, unknown>) => Effect.map(request("POST", "/logs/filter", { body }), (res) => ok(res, 200))

const at = (seconds: number) => new Date(Date.UTC(2026, 0, 2, 3, 4, seconds)).toISOString()

describe("log text search", () => {
  it("parses plain, required, excluded and quoted terms", () => {
    expect(parseTextQuery("error success")).toEqual({ include: ["error", "success"], exclude: [], required: [] })
    expect(parseTextQuery('flow -debug !test +run "connection timeout" -"no such"')).toEqual({
      include: ["flow", "connection timeout"],
      exclude: ["debug", "test", "no such"],
      required: ["run"]
    })
    expect(parseTextQuery("  ")).toEqual({ include: [], exclude: [], required: [] })
    expect(parseTextQuery('- lonely "unclosed phrase')).toEqual({ include: ["lonely", "unclosed phrase"], exclude: [], required: [] })
  })
})

describe("logs", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("takes batches (201), and reads them back by run, level, time and text", () =>
      Effect.gen(function* () {
        const created = yield* post([
          { name: "prefect.flow_runs", level: 20, message: "Ahoy, captain", timestamp: at(0), flow_run_id: FLOW_RUN },
          { name: "prefect.task_runs", level: 50, message: "Black flag ahead, captain!", timestamp: at(3600), flow_run_id: FLOW_RUN, task_run_id: TASK_RUN },
          { name: "prefect.deployments", level: 30, message: "Connection timeout while polling", timestamp: at(60), flow_run_id: FLOW_RUN },
          { name: "フロー実行", level: 10, message: "connexión\u0000 lista", timestamp: at(120) }
        ])
        expect(created.status).toBe(201)
        expect(created.body).toBeNull()
        const all = yield* read({ logs: { flow_run_id: { any_: [FLOW_RUN] } } })
        expect(all.map((l) => l.message)).toEqual(["Ahoy, captain", "Connection timeout while polling", "Black flag ahead, captain!"])
        expect(all[0]).toMatchObject({ name: "prefect.flow_runs", level: 20, timestamp: at(0), flow_run_id: FLOW_RUN, task_run_id: null })
        const messages = (logs: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
          Effect.map(read({ logs, ...extra }), (rows) => rows.map((l) => l.message))
        expect(yield* messages({ task_run_id: { any_: [TASK_RUN] } })).toEqual(["Black flag ahead, captain!"])
        expect(yield* messages({ flow_run_id: { any_: [FLOW_RUN] }, task_run_id: { is_null_: true } })).toHaveLength(2)
        expect(yield* messages({ level: { ge_: 30 } })).toEqual(["Connection timeout while polling", "Black flag ahead, captain!"])
        expect(yield* messages({ level: { ge_: 20, le_: 30 } })).toEqual(["Ahoy, captain", "Connection timeout while polling"])
        // Both time bounds are inclusive.
        expect(yield* messages({ timestamp: { after_: at(60), before_: at(120) } })).toEqual(["Connection timeout while polling", "connexión lista"])
        expect(yield* messages({ flow_run_id: { any_: [FLOW_RUN] } }, { sort: "TIMESTAMP_DESC", offset: 1, limit: 1 })).toEqual([
          "Connection timeout while polling"
        ])
        expect(yield* messages({ text: { query: "captain -flag" } })).toEqual(["Ahoy, captain"])
        expect(yield* messages({ text: { query: '"connection timeout"' } })).toEqual(["Connection timeout while polling"])
        expect(yield* messages({ text: { query: "DEPLOYMENTS" } })).toEqual(["Connection timeout while polling"])
        expect(yield* messages({ text: { query: "フロー実行" } })).toEqual(["connexión lista"])
        expect(yield* messages({ text: { query: "captain +ahead" } })).toEqual(["Black flag ahead, captain!"])
        expect(yield* messages({ text: { query: "captain" }, level: { ge_: 40 } })).toEqual(["Black flag ahead, captain!"])
        expect(yield* messages({ text: { query: "nonexistentterm12345" } })).toEqual([])
        expect((yield* read({ logs: null, limit: null, offset: null, sort: "TIMESTAMP_ASC" })).length).toBeGreaterThanOrEqual(4)

        expect((yield* post([])).status).toBe(201)
        expect((yield* post([{ name: "x", level: 20, message: "m", timestamp: at(0), worker_id: MISSING }])).status).toBe(422)
        expect((yield* post([{ name: "x", level: "high", message: "m", timestamp: at(0) }])).status).toBe(422)
        expect((yield* request("POST", "/logs/filter", { body: { logs: { name: { any_: ["x"] } } } })).status).toBe(422)
        expect((yield* request("POST", "/logs/filter", { body: { limit: 201 } })).status).toBe(422)
        expect((yield* request("POST", "/logs/filter", { body: { logs: { text: { query: "q".repeat(201) } } } })).status).toBe(422)
      })
    )

    it.effect("refuses a level the column cannot hold with 422, storing none of the batch", () =>
      Effect.gen(function* () {
        const run = "33333333-3333-4333-8333-333333333333"
        const log = (extra: Record<string, unknown>) => ({ name: "n", level: 20, message: "m", timestamp: at(0), flow_run_id: run, ...extra })
        const level = yield* post([log({}), log({ level: 40_000 })])
        expect(level.status).toBe(422)
        expect(level.body).toEqual({ detail: 'Invalid input: value "40000" is out of range for type smallint' })
        expect(yield* read({ logs: { flow_run_id: { any_: [run] } } })).toEqual([])
      })
    )

    it.effect("refuses a timestamp outside years 1 to 9999 with 422, and takes the first and last instant there are", () =>
      Effect.gen(function* () {
        const run = "44444444-4444-4444-8444-444444444444"
        const log = (timestamp: string) => ({ name: "n", level: 20, message: "m", timestamp, flow_run_id: run })
        for (const timestamp of ["0000-12-31T23:59:59Z", "+010000-01-01T00:00:00Z", "-271821-04-20T00:00:00Z"]) {
          const date = yield* post([log(at(0)), log(timestamp)])
          expect(date.status).toBe(422)
          expect(date.body.detail).toEqual([
            { loc: ["body", 1, "timestamp"], msg: "Input should be a valid datetime", type: "datetime_parsing", input: timestamp }
          ])
        }
        expect(yield* read({ logs: { flow_run_id: { any_: [run] } } })).toEqual([])
        expect((yield* post([log("0001-01-01T00:00:00Z"), log("9999-12-31T23:59:59.999Z")])).status).toBe(201)
        expect((yield* read({ logs: { flow_run_id: { any_: [run] } } })).map((l) => l.timestamp)).toEqual([
          "0001-01-01T00:00:00.000Z",
          "9999-12-31T23:59:59.999Z"
        ])
      })
    )

    it.effect("downloads a run's logs as CSV, a page at a time, and deleting the run deletes them", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("logged")
        const run = ok(yield* request("POST", "/flow_runs/", { body: { flow_id: flowId, name: "🚀-production" } }))
        const lines = Array.from({ length: 1005 }, (_, i) => ({
          name: "prefect.flow_runs",
          level: 20,
          message: i === 0 ? 'hello, "world"\nline2' : `line ${i}`,
          // Equal timestamps: pages must neither repeat nor skip a log.
          timestamp: "2026-01-02T03:04:05.400Z",
          flow_run_id: run.id,
          task_run_id: i === 1 ? TASK_RUN : null
        }))
        expect((yield* post(lines)).status).toBe(201)
        const download = yield* request("GET", `/flow_runs/${run.id}/logs/download`)
        expect(download.status).toBe(200)
        expect(download.headers.get("content-type")).toBe("text/csv; charset=utf-8")
        expect(download.headers.get("content-disposition")).toBe(
          `attachment; filename="flow-run-logs.csv"; filename*=UTF-8''%F0%9F%9A%80-production-logs.csv`
        )
        expect(download.text.startsWith("timestamp,level,flow_run_id,task_run_id,message\r\n")).toBe(true)
        expect(download.text).toContain(`2026-01-02 03:04:05.400000+00:00,20,${run.id},,"hello, ""world""\nline2"\r\n`)
        expect(download.text).toContain(`2026-01-02 03:04:05.400000+00:00,20,${run.id},${TASK_RUN},line 1\r\n`)
        const rows = download.text.split("\r\n").filter((line) => line !== "")
        expect(rows).toHaveLength(1 + 1005)
        expect(new Set(rows).size).toBe(rows.length)
        expect((yield* request("GET", `/flow_runs/${MISSING}/logs/download`)).body).toEqual({ detail: "Flow run not found" })
        // A name of many kilobytes goes into the file name cut to 200 characters, so clients can read the header.
        expect((yield* request("PATCH", `/flow_runs/${run.id}`, { body: { name: "🚀".repeat(20_000) } })).status).toBe(204)
        const long = yield* request("GET", `/flow_runs/${run.id}/logs/download`)
        expect(long.status).toBe(200)
        expect(long.headers.get("content-disposition")).toBe(
          `attachment; filename="flow-run-logs.csv"; filename*=UTF-8''${"%F0%9F%9A%80".repeat(200)}-logs.csv`
        )

        expect((yield* request("DELETE", `/flow_runs/${run.id}`)).status).toBe(204)
        expect(yield* read({ logs: { flow_run_id: { any_: [run.id] } } })).toEqual([])
      })
    )

    it.effect("closes /logs/out with a reason while server.logs.stream_out_enabled is off", () =>
      Effect.gen(function* () {
        const socket = opened(yield* connect("/logs/out"))
        socket.send({ type: "auth", token: null })
        expect(yield* Effect.promise(() => socket.next())).toEqual({ type: "auth_success" })
        expect(yield* Effect.promise(() => socket.closed)).toEqual({
          code: 1008,
          reason: "Log streaming is off (server.logs.stream_out_enabled is false)"
        })
      })
    )
  })
})
