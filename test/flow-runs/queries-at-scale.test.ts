/**
 * The shapes the flow-run queries take to stay fast over many runs answer exactly what the plain
 * queries answer: history and the unfiltered count from the rollup of final runs, a filter on several
 * state types read one type at a time, and pages written straight to JSON.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema, TestClock } from "effect"
import { rollupFilter } from "../../src/flow-runs/history.ts"
import { decodeStateDetails } from "../../src/domain/fast-decode.ts"
import { StateDetails } from "../../src/domain/states.ts"
import { FlowRunsRepo } from "../../src/flow-runs/repo.ts"
import { FlowRun, FlowRunPolicy } from "../../src/flow-runs/schemas.ts"
import { decodePolicy, flowRunWire } from "../../src/flow-runs/wire.ts"
import { idOf } from "../support/api.ts"
import { rollupIsExact } from "../support/rollup.ts"
import { type Json, request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"
/** A request body: its criteria, flow_runs among them. */
type Body = { readonly flow_runs?: Record<string, unknown>; readonly [key: string]: unknown }
/** The same body with a criterion that changes nothing but is one the rollup cannot serve: the plain query answers it. */
const plainly = (body: Body): Body => ({ ...body, flow_runs: { ...body.flow_runs, id: { not_any_: [MISSING] } } })

const BASE = Date.UTC(2030, 0, 1)
const iso = (ms: number) => new Date(ms).toISOString()
const MINUTE = 60_000
const HOUR = 3_600_000

/** The history windows both tests ask around `at`: on the hour, not, a month of days, and up to the clock `now`. */
const historyWindows = (at: number, now: number) => [
  { history_start: iso(at - 6 * HOUR), history_end: iso(at + 4 * HOUR), history_interval_seconds: 3600 },
  { history_start: iso(at - 5 * HOUR + 17 * MINUTE + 23_456), history_end: iso(at + 3 * HOUR), history_interval_seconds: 1200 },
  // What the bench asks: 30 days to the end of tomorrow, a day each.
  { history_start: iso(at - 30 * 24 * HOUR), history_end: iso(at + 2 * 24 * HOUR), history_interval_seconds: 86400 },
  // Up to the clock, from a start not on the hour, as a UI asks.
  { history_start: iso(now - 24 * HOUR), history_end: iso(now), history_interval_seconds: 3600 },
  { history_start: iso(now - 6 * HOUR + 1), history_end: iso(now + 1), history_interval_seconds: 600 }
]

const post = (path: string, body: unknown) =>
  Effect.map(request("POST", path, { body }), (res) => {
    expect(res.status, `${path} ${JSON.stringify(body)} ${JSON.stringify(res.body)}`).toBeLessThan(300)
    return res.body
  })

const setState = (id: string, state: Record<string, unknown>, force = false) =>
  post(`/flow_runs/${id}/set_state`, { state, force })

/** History from the rollup and from the runs agree. */
const sameHistory = (window: { history_start: string; history_end: string; history_interval_seconds: number }, filter: Body = {}) =>
  Effect.gen(function* () {
    const fast = yield* post("/flow_runs/history", { ...window, ...filter })
    const plain = yield* post("/flow_runs/history", plainly({ ...window, ...filter }))
    expect(fast.length).toBe(plain.length)
    for (const [i, bucket] of fast.entries()) {
      const reference = plain[i]
      expect([bucket.interval_start, bucket.interval_end]).toEqual([reference.interval_start, reference.interval_end])
      const key = (s: Json) => `${s.state_type}/${s.state_name}`
      const sorted = [...reference.states].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
      expect(bucket.states.map(key), `bucket ${bucket.interval_start} ${JSON.stringify(filter)}`).toEqual(sorted.map(key))
      for (const [j, state] of bucket.states.entries()) {
        const expected = sorted[j]
        expect(state.count_runs).toBe(expected.count_runs)
        // Both add lateness exactly (numeric). Run times the plain query adds as doubles, in whatever
        // order it reads the runs; the rollup adds them exactly and rounds once (98.969 where the
        // plain query says 98.96899999999998).
        expect(state.sum_estimated_run_time).toBeCloseTo(expected.sum_estimated_run_time as number, 6)
        expect(state.sum_estimated_lateness).toBe(expected.sum_estimated_lateness)
      }
    }
    return fast
  })

const windows = [
  { history_start: iso(BASE), history_end: iso(BASE + 2 * 24 * HOUR), history_interval_seconds: 86400 },
  { history_start: iso(BASE + 17 * MINUTE + 23_456), history_end: iso(BASE + 30 * HOUR), history_interval_seconds: 3600 },
  { history_start: iso(BASE - HOUR + 500), history_end: iso(BASE + 30 * HOUR), history_interval_seconds: 5400 },
  { history_start: iso(BASE + 7 * MINUTE), history_end: iso(BASE + 6 * HOUR), history_interval_seconds: 600 },
  { history_start: iso(BASE + 2 * HOUR), history_end: iso(BASE + 5 * HOUR), history_interval_seconds: 3600 },
  { history_start: iso(BASE - 24 * HOUR), history_end: iso(BASE + 3 * 24 * HOUR), history_interval_seconds: 7 * 3600 },
  { history_start: iso(Date.UTC(1999, 0, 1)), history_end: iso(Date.UTC(1999, 0, 2)), history_interval_seconds: 3600 },
  { history_start: iso(BASE), history_end: iso(BASE), history_interval_seconds: 3600 },
  // Several boundaries in each quarter hour, and one interval starting just inside one: a cut slot's
  // largest piece is its rollup row less the runs of the others.
  { history_start: iso(BASE + 2 * MINUTE + 7_001), history_end: iso(BASE + 8 * HOUR), history_interval_seconds: 300 },
  { history_start: iso(BASE + 14 * MINUTE + 59_999), history_end: iso(BASE + 26 * HOUR + 1), history_interval_seconds: 8 * 3600 },
  // Whole hours and quarter hours: boundaries on quarter hours inside hours (no quarter hour cut, but
  // each such hour in two intervals), a start half past, a start a quarter to, whole hours inside
  // longer intervals beside hours cut at their ends.
  { history_start: iso(BASE), history_end: iso(BASE + 6 * HOUR), history_interval_seconds: 900 },
  { history_start: iso(BASE + 15 * MINUTE), history_end: iso(BASE + 27 * HOUR), history_interval_seconds: 2700 },
  { history_start: iso(BASE + 30 * MINUTE), history_end: iso(BASE + 27 * HOUR), history_interval_seconds: 7200 },
  { history_start: iso(BASE - 45 * MINUTE), history_end: iso(BASE + 26 * HOUR + 15 * MINUTE), history_interval_seconds: 3 * 3600 }
]

/** Counts from the rollup and from the runs agree. */
const sameCount = (filter: Body) =>
  Effect.gen(function* () {
    const fast = yield* post("/flow_runs/count", filter)
    expect(fast, JSON.stringify(filter)).toBe(yield* post("/flow_runs/count", plainly(filter)))
    return fast as number
  })

/** Filters the rollup serves: on expected start time (inclusive both ends) and state. */
const filters: ReadonlyArray<Body> = [
  {},
  { flow_runs: {} },
  { flow_runs: { expected_start_time: { after_: iso(BASE + 3 * HOUR + 5 * MINUTE) } } },
  { flow_runs: { expected_start_time: { before_: iso(BASE + 9 * HOUR) } } },
  // Exactly the expected start of runs 5 and 20: both ends include them.
  { flow_runs: { expected_start_time: { after_: iso(BASE + 5 * (37 * MINUTE + 1_234)), before_: iso(BASE + 20 * (37 * MINUTE + 1_234)) } } },
  { flow_runs: { expected_start_time: { after_: iso(BASE + 2 * HOUR), before_: iso(BASE + 2 * HOUR) } } },
  { flow_runs: { state: { type: { any_: ["COMPLETED", "RUNNING", "SCHEDULED"] } } } },
  { flow_runs: { state: { name: { any_: ["Completed", "Cached", "Late"] } } } },
  {
    flow_runs: {
      expected_start_time: { after_: iso(BASE + 90 * MINUTE + 7), before_: iso(BASE + 20 * HOUR + 1) },
      state: { type: { any_: ["COMPLETED", "FAILED"] }, name: { any_: ["Completed"] } }
    }
  },
  { flow_runs: { state: { type: { any_: [] } } } },
  // On quarter hours inside hours (no quarter hour cut, the hours around them not whole), and on the hour.
  { flow_runs: { expected_start_time: { after_: iso(BASE + 2 * HOUR + 45 * MINUTE), before_: iso(BASE + 19 * HOUR + 15 * MINUTE) } } },
  { flow_runs: { expected_start_time: { after_: iso(BASE + 4 * HOUR), before_: iso(BASE + 22 * HOUR - 1) }, state: { type: { any_: ["COMPLETED", "RUNNING"] } } } }
]

describe("flow-run queries at scale", () => {
  it.layer(testServer(), { timeout: 180_000 })((it) => {
    it.effect("history and counts from the rollup answer as the plain queries, through every kind of write", () =>
      Effect.gen(function* () {
        // The clock stays near one time (clocks moving far wake every sleeping loop at each step):
        // 42 runs expected 37 minutes (and a bit) apart before it, each driven to its fate now.
        yield* TestClock.setTime(BASE + 30 * HOUR)
        const alpha = (yield* post("/flows/", { name: "rollup-alpha" })).id
        const beta = (yield* post("/flows/", { name: "rollup-beta" })).id
        const runs: Array<{ id: string; fate: number }> = []
        for (let i = 0; i < 42; i++) {
          const expected = BASE + i * (37 * MINUTE + 1_234)
          const run = yield* post("/flow_runs/", {
            flow_id: i % 3 === 0 ? beta : alpha,
            state: { type: "SCHEDULED", state_details: { scheduled_time: iso(expected) } }
          })
          runs.push({ id: idOf(run), fate: i % 7 })
        }
        for (const [i, run] of runs.entries()) {
          yield* TestClock.adjust(`${(i % 4) * 1_001} millis`)
          if (run.fate === 0) continue
          if (run.fate === 6) {
            yield* setState(run.id, { type: "CANCELLED" })
            continue
          }
          yield* setState(run.id, { type: "PENDING" })
          if (run.fate === 1) continue
          yield* setState(run.id, { type: "RUNNING" })
          if (run.fate === 2) continue
          yield* TestClock.adjust(`${(i % 5) * 7_013 + 1_301} millis`)
          yield* setState(run.id, { type: run.fate === 3 ? "COMPLETED" : run.fate === 4 ? "FAILED" : "CRASHED" })
        }
        yield* TestClock.adjust("3 seconds")

        const sql = yield* SqlClient.SqlClient
        const check = Effect.gen(function* () {
          yield* rollupIsExact
          for (const window of windows) yield* sameHistory(window)
          for (const filter of filters) {
            yield* sameCount(filter)
            for (const window of [...windows.slice(0, 3), ...windows.slice(8)]) yield* sameHistory(window, filter)
          }
          // Folded into the rollup, the deltas give the same answers.
          yield* sql`SELECT flow_run_rollup_fold()`
          expect(yield* sql`SELECT * FROM flow_run_rollup_delta`).toEqual([])
          yield* rollupIsExact
          for (const window of windows.slice(0, 3)) yield* sameHistory(window)
          for (const filter of filters) yield* sameCount(filter)
        })
        // After each later write, the rollup is checked exactly against the runs, and the answers
        // through a few windows and every filter (the whole set above costs ~120 requests).
        const recheck = Effect.gen(function* () {
          yield* rollupIsExact
          for (const window of [...windows.slice(0, 3), ...windows.slice(8)]) yield* sameHistory(window)
          for (const filter of filters) yield* sameCount(filter)
        })
        yield* check
        expect(yield* sameCount(filters[4]!)).toBe(16)
        const day = yield* sameHistory(windows[0]!)
        expect(day[0].states.map((s) => s.state_type)).toEqual(
          expect.arrayContaining(["CANCELLED", "COMPLETED", "CRASHED", "FAILED", "PENDING", "RUNNING", "SCHEDULED"])
        )

        // Whole hours come from flow_run_rollup_hour: a row changed there changes the answers that take
        // its hour whole (a count, a day, an hour), not those where a boundary on a quarter hour inside
        // it puts its quarter hours in two intervals (read per quarter hour).
        const completed = (answer: Json, i: number) =>
          (answer[i].states.find((s: Json) => s.state_type === "COMPLETED")?.count_runs ?? 0) as number
        const hourly = { history_start: iso(BASE), history_end: iso(BASE + 6 * HOUR), history_interval_seconds: 3600 }
        const counted = yield* sameCount({})
        const hours = yield* sameHistory(hourly)
        const changed = yield* sql`
          UPDATE flow_run_rollup_hour SET count_runs = count_runs + 1000
          WHERE slot = ${new Date(BASE + HOUR)} AND state_type = 'COMPLETED' RETURNING 1
        `
        expect(changed.length).toBe(1)
        expect(yield* post("/flow_runs/count", {})).toBe(counted + 1000)
        expect(completed(yield* post("/flow_runs/history", windows[0]), 0)).toBe(completed(day, 0) + 1000)
        expect(completed(yield* post("/flow_runs/history", hourly), 1)).toBe(completed(hours, 1) + 1000)
        yield* sameHistory(windows[10]!)
        yield* sameHistory(windows[11]!)
        yield* sql`UPDATE flow_run_rollup_hour SET count_runs = count_runs - 1000 WHERE slot = ${new Date(BASE + HOUR)} AND state_type = 'COMPLETED'`
        yield* recheck

        // A final run run again, a final run forced into another final state, deletions, a flow's runs going with it.
        yield* setState(runs[3]!.id, { type: "SCHEDULED", state_details: { scheduled_time: iso(BASE + 40 * HOUR) } }, true)
        yield* recheck
        yield* setState(runs[4]!.id, { type: "COMPLETED" }, true)
        yield* recheck
        yield* setState(runs[10]!.id, { type: "RUNNING" }, true)
        yield* setState(runs[10]!.id, { type: "COMPLETED", name: "Cached" }, true)
        yield* recheck
        expect((yield* request("DELETE", `/flow_runs/${runs[17]!.id}`)).status).toBe(204)
        yield* recheck
        yield* post("/flow_runs/bulk_delete", { flow_runs: { id: { any_: [runs[24]!.id, runs[25]!.id, runs[26]!.id] } } })
        yield* recheck
        expect((yield* request("DELETE", `/flows/${beta}`)).status).toBe(204)
        yield* recheck
      }), 120_000
    )

    it.effect("unfinished runs of every kind, from the rollup as the clock moves past them, answer as the plain queries", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        // Runs expected every 7 min 13 s from 5 hours before the clock to 3 hours after it, each
        // brought to one kind of unfinished (or final) state.
        const T = BASE + 400 * HOUR
        yield* TestClock.setTime(T)
        const flow = (yield* post("/flows/", { name: "live-kinds" })).id
        const runs: Array<{ id: string; kind: number }> = []
        for (let i = 0; i < 67; i++) {
          const expected = T - 5 * HOUR + i * (7 * MINUTE + 13_000)
          const run = yield* post("/flow_runs/", {
            flow_id: flow,
            state: { type: "SCHEDULED", state_details: { scheduled_time: iso(expected) } }
          })
          runs.push({ id: idOf(run), kind: i % 10 })
        }
        for (const [i, run] of runs.entries()) {
          yield* TestClock.adjust(`${(i % 3) * 1_009 + 7} millis`)
          switch (run.kind) {
            case 0: // stays Scheduled: late once the clock is past it
              break
            case 1:
              yield* setState(run.id, { type: "PENDING" })
              break
            case 2:
            case 7:
              yield* setState(run.id, { type: "PENDING" })
              yield* setState(run.id, { type: "RUNNING" })
              break
            case 3:
              yield* setState(run.id, { type: "RUNNING" }, true)
              yield* TestClock.adjust("2 seconds")
              yield* setState(run.id, { type: "PAUSED" }, true)
              break
            case 4:
              yield* setState(run.id, { type: "RUNNING" }, true)
              yield* setState(run.id, { type: "CANCELLING" }, true)
              break
            case 5:
              yield* setState(run.id, { type: "SCHEDULED", name: "Late", state_details: { scheduled_time: iso(T - 6 * HOUR) } }, true)
              break
            case 6:
              yield* setState(run.id, { type: "PENDING" })
              yield* setState(run.id, { type: "RUNNING" })
              yield* TestClock.adjust("1 second")
              yield* setState(run.id, { type: "COMPLETED" })
              break
            case 8: // paused before it ever ran: not started, so late like a Scheduled run
              yield* setState(run.id, { type: "PAUSED" }, true)
              break
            case 9:
              yield* setState(run.id, { type: "PENDING" })
              yield* setState(run.id, { type: "RUNNING" })
              yield* setState(run.id, { type: "PENDING" }, true)
              break
          }
        }

        const liveWindows = (now: number) => [
          ...historyWindows(T, now),
          // Boundaries on quarter hours inside hours, whole hours between them, the hour of the clock
          // among them; a day around the clock from half past.
          { history_start: iso(T - 6 * HOUR + 45 * MINUTE), history_end: iso(T + 5 * HOUR + 15 * MINUTE), history_interval_seconds: 4 * 3600 },
          { history_start: iso(T - 24 * HOUR - 30 * MINUTE), history_end: iso(T + 24 * HOUR), history_interval_seconds: 86400 }
        ]
        const liveFilters = (now: number): ReadonlyArray<Body> => [
          {},
          { flow_runs: { expected_start_time: { after_: iso(now - 7 * 24 * HOUR) } } },
          { flow_runs: { expected_start_time: { after_: iso(T - HOUR - 3 * MINUTE), before_: iso(T + 30 * MINUTE + 1) } } },
          { flow_runs: { expected_start_time: { before_: iso(now) } } },
          { flow_runs: { state: { type: { any_: ["RUNNING"] } } } },
          { flow_runs: { state: { type: { any_: ["SCHEDULED", "PENDING", "PAUSED", "CANCELLING"] } } } },
          { flow_runs: { state: { name: { any_: ["Late", "Scheduled", "Running"] } } } }
        ]
        const check = Effect.gen(function* () {
          yield* rollupIsExact
          const now = (yield* TestClock.currentTimeMillis)
          for (const window of liveWindows(now)) yield* sameHistory(window)
          for (const filter of liveFilters(now)) {
            yield* sameCount(filter)
            for (const window of [...liveWindows(now).slice(0, 2), liveWindows(now)[3]!, ...liveWindows(now).slice(5)]) {
              yield* sameHistory(window, filter)
            }
          }
        })
        // At the clock (on the quarter hour), then inside a quarter hour, then hours later.
        yield* TestClock.setTime(T)
        yield* check
        const day = yield* sameHistory(liveWindows(T)[0]!)
        expect(day.flatMap((bucket) => bucket.states.map((s) => s.state_name))).toEqual(
          expect.arrayContaining(["Scheduled", "Late", "Pending", "Running", "Paused", "Cancelling", "Completed"])
        )
        yield* TestClock.adjust(`${20 * 60_000 + 17_123} millis`)
        yield* check
        // Folded, the same.
        yield* sql`SELECT flow_run_rollup_fold()`
        yield* check

        // Runs moving on: finishing, running again, deleted; the clock moves past the future ones.
        for (const run of runs.filter((r) => r.kind === 2).slice(0, 3)) yield* setState(run.id, { type: "COMPLETED" })
        for (const run of runs.filter((r) => r.kind === 1).slice(0, 3)) yield* setState(run.id, { type: "RUNNING" })
        for (const run of runs.filter((r) => r.kind === 0).slice(0, 2)) yield* setState(run.id, { type: "PENDING" })
        expect((yield* request("DELETE", `/flow_runs/${runs.find((r) => r.kind === 7)!.id}`)).status).toBe(204)
        yield* post("/flow_runs/bulk_delete", { flow_runs: { id: { any_: runs.filter((r) => r.kind === 0).slice(3, 5).map((r) => r.id) } } })
        yield* TestClock.adjust(`${2 * HOUR + 3_001} millis`)
        yield* check

        // A Running run whose state timestamp is after the clock (another server's clock ahead), one
        // whose total run time is negative: their rows are read from the runs until the clock is past.
        const running = runs.filter((r) => r.kind === 7).slice(1).map((r) => r.id)
        const now = yield* TestClock.currentTimeMillis
        yield* sql`UPDATE flow_run SET state_timestamp = ${new Date(now + 40 * MINUTE)} WHERE id = ${running[0]!}`
        yield* sql`UPDATE flow_run SET total_run_time = -5 WHERE id = ${running[1]!}`
        yield* check
        // Folded: the bounds are then in the rows of the quarter hours and of the hours.
        yield* sql`SELECT flow_run_rollup_fold()`
        yield* check
        yield* TestClock.adjust("1 hour")
        yield* check
        // Runs the rollup cannot hold (none that Baton writes): no state, no expected start time.
        yield* sql`UPDATE flow_run SET state_type = NULL, state_name = NULL WHERE id = ${runs.find((r) => r.kind === 1)!.id}`
        yield* sql`UPDATE flow_run SET expected_start_time = NULL WHERE id = ${runs.find((r) => r.kind === 3)!.id}`
        yield* sql`UPDATE flow_run SET expected_start_time = NULL WHERE id = ${runs.find((r) => r.kind === 6)!.id}`
        yield* check
        yield* sql`SELECT flow_run_rollup_fold()`
        yield* check
        expect((yield* request("DELETE", `/flows/${flow}`)).status).toBe(204)
        yield* rollupIsExact
      }), 180_000
    )

    it.effect("a cut quarter hour's largest piece, its rollup row less the runs of the other pieces, answers as the plain history", () =>
      Effect.gen(function* () {
        // Final runs 97 s apart over two hours before the others, each late by its own amount: every
        // piece of a cut quarter hour holds some.
        const flow = (yield* post("/flows/", { name: "pieces" })).id
        const from = BASE - 10 * HOUR
        for (let i = 0; i < 80; i++) {
          const run = idOf(yield* post("/flow_runs/", {
            flow_id: flow,
            state: { type: "SCHEDULED", state_details: { scheduled_time: iso(from + i * 97_003) } }
          }))
          if (i % 9 === 8) continue
          yield* setState(run, { type: "PENDING" })
          yield* setState(run, { type: "RUNNING" })
          yield* TestClock.adjust(`${(i % 6) * 1_237 + 11} millis`)
          yield* setState(run, { type: i % 4 === 0 ? "FAILED" : "COMPLETED" })
        }
        const windows = [
          [from + 2 * MINUTE + 7_001, 300],
          [from + 14 * MINUTE + 59_999, 420],
          [from + 7 * MINUTE + 30_000, 3600],
          [from + 40_000, 960]
        ] as const
        for (const [start, seconds] of windows) {
          const window = { history_start: iso(start), history_end: iso(start + 2 * HOUR + 13 * MINUTE), history_interval_seconds: seconds }
          const answer = yield* sameHistory(window)
          expect(answer.flatMap((bucket) => bucket.states).filter((s) => s.state_type === "COMPLETED").length).toBeGreaterThan(1)
          yield* sameHistory(window, {
            flow_runs: { expected_start_time: { after_: iso(from + 31 * MINUTE + 3_001), before_: iso(from + 100 * MINUTE + 17) } }
          })
          yield* sameHistory(window, { flow_runs: { state: { type: { any_: ["FAILED"] } } } })
        }
      })
    )

    it.effect("a history and count filtered by deployments, from the rollup per deployment, answer as the plain queries as runs move between deployments and the clock moves", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const T = BASE + 800 * HOUR
        yield* TestClock.setTime(T)
        const flow = (yield* post("/flows/", { name: "per-deployment" })).id
        const deployment = (name: string) => Effect.map(post("/deployments/", { name, flow_id: flow }), idOf)
        const a = yield* deployment("dep-a")
        const b = yield* deployment("dep-b")
        const c = yield* deployment("dep-c")
        // Runs expected every 7 min 13 s from 5 hours before the clock to 3 hours after it; deployment
        // a has most of them, some have none. Each brought to one kind of state: every kind meets
        // every owner (8 kinds, 7 owners).
        const owners = [a, b, c, null, a, a, b]
        const runs: Array<{ id: string; kind: number; owner: string | null }> = []
        for (let i = 0; i < 67; i++) {
          const owner = owners[i % owners.length]!
          const run = yield* post("/flow_runs/", {
            flow_id: flow,
            ...(owner === null ? {} : { deployment_id: owner }),
            state: { type: "SCHEDULED", state_details: { scheduled_time: iso(T - 5 * HOUR + i * (7 * MINUTE + 13_000)) } }
          })
          runs.push({ id: idOf(run), kind: i % 8, owner })
        }
        // And as a deployment makes them (expected now).
        for (const owner of [a, b, a]) {
          const run = yield* post(`/deployments/${owner}/create_flow_run`, {})
          runs.push({ id: idOf(run), kind: 2, owner })
        }
        for (const [i, run] of runs.entries()) {
          yield* TestClock.adjust(`${(i % 3) * 1_009 + 7} millis`)
          switch (run.kind) {
            case 0: // stays Scheduled (some marked Late): late once the clock is past it
              if (i % 16 === 0) yield* setState(run.id, { type: "SCHEDULED", name: "Late", state_details: { scheduled_time: iso(T - 6 * HOUR) } }, true)
              break
            case 1:
              yield* setState(run.id, { type: "PENDING" })
              break
            case 2:
              yield* setState(run.id, { type: "PENDING" })
              yield* setState(run.id, { type: "RUNNING" })
              break
            case 3:
              yield* setState(run.id, { type: "PENDING" })
              yield* setState(run.id, { type: "RUNNING" })
              yield* TestClock.adjust("1 second")
              yield* setState(run.id, { type: "COMPLETED" })
              break
            case 4:
              yield* setState(run.id, { type: "RUNNING" }, true)
              yield* TestClock.adjust("3 seconds")
              yield* setState(run.id, { type: "FAILED" })
              break
            case 5:
              yield* setState(run.id, { type: "CANCELLED" })
              break
            case 6: // paused before it ever ran: not started, so late like a Scheduled run
              yield* setState(run.id, { type: "PAUSED" }, true)
              break
            case 7:
              yield* setState(run.id, { type: "RUNNING" }, true)
              yield* TestClock.adjust("2 seconds")
              yield* setState(run.id, { type: "CANCELLING" }, true)
              break
          }
        }

        const windows = (now: number) => historyWindows(T, now)
        const filters = (now: number): ReadonlyArray<Body> => [
          { flow_runs: { deployment_id: { any_: [a] } } },
          { flow_runs: { deployment_id: { any_: [b, c] } } },
          { flow_runs: { deployment_id: { any_: [a, a, MISSING] } } },
          { flow_runs: { deployment_id: { any_: [] } } },
          { deployments: { id: { any_: [a, c] } } },
          { deployments: { operator: "or_", id: { any_: [a.toUpperCase(), c] } }, flow_runs: { deployment_id: { any_: [a, b] } } },
          {
            flow_runs: {
              deployment_id: { operator: "or_", any_: [b, a] },
              state: { type: { any_: ["RUNNING", "SCHEDULED", "COMPLETED", "CANCELLING"] } },
              expected_start_time: { after_: iso(T - 3 * HOUR + 7), before_: iso(now) }
            }
          },
          { flow_runs: { deployment_id: { any_: [c] }, state: { name: { any_: ["Late", "Scheduled", "Paused"] } } } }
        ]
        // Each of those is one the rollup answers (else the comparisons below would prove nothing).
        for (const filter of filters(T)) expect(rollupFilter(filter as never)?.deployments, JSON.stringify(filter)).toBeDefined()
        // Bodies that are not only deployment ids are answered from the runs.
        for (const other of [
          { deployments: {} },
          { deployments: { id: { not_any_: [a] } } },
          { deployments: { id: { any_: [a] }, name: { any_: ["dep-a"] } } },
          { flow_runs: { deployment_id: { is_null_: true } } },
          { flow_runs: { deployment_id: { any_: [a], is_null_: false } } },
          { flow_runs: { operator: "or_", deployment_id: { any_: [a] }, state: { type: { any_: ["RUNNING"] } } } },
          { flows: { id: { any_: [flow] } }, flow_runs: { deployment_id: { any_: [a] } } }
        ]) {
          expect(rollupFilter(other as never), JSON.stringify(other)).toBeUndefined()
        }
        const check = Effect.gen(function* () {
          yield* rollupIsExact
          const now = yield* TestClock.currentTimeMillis
          for (const filter of filters(now)) {
            yield* sameCount(filter)
            for (const window of windows(now)) yield* sameHistory(window, filter)
          }
          yield* sameHistory(windows(now)[0]!)
          yield* sameCount({})
        })
        // At the clock (on the quarter hour), then inside a quarter hour, then folded.
        yield* check
        const day = yield* sameHistory(windows(T)[0]!, filters(T)[0]!)
        expect(day.flatMap((bucket) => bucket.states.map((s) => s.state_name))).toEqual(
          expect.arrayContaining(["Scheduled", "Late", "Pending", "Running", "Paused", "Cancelling", "Completed", "Failed", "Cancelled"])
        )
        expect(yield* sameCount(filters(T)[0]!)).toBe(runs.filter((r) => r.owner === a).length)
        yield* TestClock.adjust(`${20 * 60_000 + 17_123} millis`)
        yield* check
        yield* sql`SELECT flow_run_rollup_fold()`
        yield* check

        // Runs moving on, changing deployment, gaining one and losing it; deletions.
        const of = (owner: string | null, kind: number) => runs.filter((r) => r.owner === owner && r.kind === kind)
        yield* sql`UPDATE flow_run SET deployment_id = ${c} WHERE id = ${of(a, 2)[0]!.id}`
        yield* sql`UPDATE flow_run SET deployment_id = ${a} WHERE id = ${of(b, 3)[0]!.id}`
        yield* sql`UPDATE flow_run SET deployment_id = ${b} WHERE id = ${of(null, 0)[0]!.id}`
        yield* sql`UPDATE flow_run SET deployment_id = NULL WHERE id = ${of(a, 6)[0]!.id}`
        yield* sql`UPDATE flow_run SET deployment_id = NULL WHERE id = ${of(a, 4)[0]!.id}`
        // A deployment change and a transition in one statement.
        yield* sql`
          UPDATE flow_run SET deployment_id = ${a}, state_type = 'PENDING', state_name = 'Pending'
          WHERE id = ${of(c, 0)[0]!.id}
        `
        for (const run of [...of(a, 1), ...of(b, 1)].slice(0, 3)) yield* setState(run.id, { type: "RUNNING" })
        for (const run of [...of(a, 2), ...of(c, 2)].slice(1, 4)) yield* setState(run.id, { type: "COMPLETED" })
        expect((yield* request("DELETE", `/flow_runs/${of(b, 4)[0]!.id}`)).status).toBe(204)
        yield* post("/flow_runs/bulk_delete", { flow_runs: { id: { any_: [of(a, 5)[0]!.id, of(null, 3)[0]!.id] } } })
        yield* check
        yield* sql`SELECT flow_run_rollup_fold()`
        yield* check

        // Deployment c deleted: with it go its runs still Scheduled that never ran; the others keep its
        // id (the `deployments` filter no longer matches them, the runs' deployment_id does) …
        expect((yield* request("DELETE", `/deployments/${c}`)).status).toBe(204)
        yield* check
        // … (the reference has had no foreign key there since 2023), and when they lose it all at once
        // the rollup per deployment follows.
        yield* sql`UPDATE flow_run SET deployment_id = NULL WHERE deployment_id = ${c}`
        yield* check
        expect(yield* sameCount({ flow_runs: { deployment_id: { any_: [c] } } })).toBe(0)
        // Hours later: the waiting runs late, the future ones past.
        yield* TestClock.adjust(`${4 * HOUR + 3_001} millis`)
        yield* check
        yield* sql`SELECT flow_run_rollup_fold()`
        yield* check

        // The answers come from flow_run_rollup_deployment: a row changed there changes them.
        const body = { flow_runs: { deployment_id: { any_: [b] } } }
        const before = (yield* post("/flow_runs/count", body)) as number
        const rows = yield* sql<{ n: number }>`
          UPDATE flow_run_rollup_deployment SET count_runs = count_runs + 1000 WHERE deployment_id = ${b} RETURNING 1 AS n
        `
        expect(rows.length).toBeGreaterThan(0)
        expect(yield* post("/flow_runs/count", body)).toBe(before + 1000 * rows.length)
        expect(yield* post("/flow_runs/count", plainly(body))).toBe(before)
        yield* sql`UPDATE flow_run_rollup_deployment SET count_runs = count_runs - 1000 WHERE deployment_id = ${b}`
        yield* check

        // The flow deleted, its runs with it: nothing left of them, per deployment or not.
        expect((yield* request("DELETE", `/flows/${flow}`)).status).toBe(204)
        yield* rollupIsExact
        expect(yield* sql`SELECT 1 FROM flow_run_rollup_deployment WHERE deployment_id IN (${a}, ${b}, ${c})`).toEqual([])
      }), 240_000
    )

    it.effect("a filter on several state types reads them one at a time and answers the same page", () =>
      Effect.gen(function* () {
        const flow = (yield* post("/flows/", { name: "split-states" })).id
        const types = ["SCHEDULED", "PENDING", "RUNNING", "COMPLETED", "FAILED", "CRASHED"] as const
        for (let i = 0; i < 36; i++) {
          // Pairs share an expected start time: ties are broken by id.
          const expected = BASE + 100 * HOUR + Math.floor(i / 2) * MINUTE
          const run = yield* post("/flow_runs/", {
            flow_id: flow,
            state: { type: "SCHEDULED", state_details: { scheduled_time: iso(expected) } }
          })
          const type = types[i % types.length]!
          if (type !== "SCHEDULED") yield* setState(idOf(run), { type }, true)
          yield* TestClock.adjust("1 second")
        }
        const mine = { flows: { name: { any_: ["split-states"] } } }
        const page = (flowRuns: Record<string, unknown>, sort: string, limit: number, offset: number) =>
          Effect.map(post("/flow_runs/filter", { ...mine, flow_runs: flowRuns, sort, limit, offset }), (runs) =>
            runs.map((r) => r.id))
        for (const sort of ["ID_DESC", "START_TIME_ASC", "START_TIME_DESC", "EXPECTED_START_TIME_ASC", "EXPECTED_START_TIME_DESC"]) {
          for (const [limit, offset] of [[200, 0], [5, 0], [5, 3], [4, 9], [0, 0], [50, 30]] as const) {
            for (const any_ of [["FAILED", "CRASHED"], ["COMPLETED", "RUNNING", "SCHEDULED", "RUNNING"], ["PAUSED", "PENDING"]]) {
              const split = yield* page({ state: { type: { any_ } } }, sort, limit, offset)
              // or_ over one criterion means the same and is read in one piece.
              const whole = yield* page({ operator: "or_", state: { type: { any_ } } }, sort, limit, offset)
              expect(split, `${sort} ${limit}/${offset} ${any_}`).toEqual(whole)
            }
          }
          const withOthers = yield* page({ state: { type: { any_: ["FAILED", "COMPLETED"], not_any_: ["FAILED"] } } }, sort, 200, 0)
          expect(withOthers).toEqual(yield* page({ state: { type: { any_: ["COMPLETED"] } } }, sort, 200, 0))
        }
      })
    )

    it.effect("pages are written as the schema encodes them, details and policies decoded as the schema does", () =>
      Effect.gen(function* () {
        const repo = yield* FlowRunsRepo
        const flow = (yield* post("/flows/", { name: "wire" })).id
        yield* post("/flow_runs/", {
          flow_id: flow,
          tags: ["a", "b"],
          labels: { team: "x", n: 3, ok: true },
          parameters: { nested: { list: [1, "two", null] }, "1": "numeric key" },
          context: { k: "v" },
          empirical_policy: { max_retries: 2, retry_delay_seconds: 1.5, retries: 2, retry_delay: 1, pause_keys: ["p"], resuming: true, retry_type: "in_process" },
          state: { type: "SCHEDULED", message: "soon", data: { x: 1 }, state_details: { scheduled_time: "2031-05-06T07:08:09.123Z", pause_key: "k" } }
        })
        yield* post("/flow_runs/", { flow_id: flow })
        const run = yield* post("/flow_runs/", { flow_id: flow, state: { type: "RUNNING" } })
        yield* setState(idOf(run), { type: "PAUSED", state_details: { pause_timeout: "2031-01-01T00:00:00Z", pause_reschedule: true } }, true)
        const runs = yield* repo.filter({ flows: { operator: "and_", name: { any_: ["wire"] } }, sort: "ID_DESC", limit: 200, offset: 0 })
        expect(runs).toHaveLength(3)
        expect(JSON.stringify(runs.map(flowRunWire))).toBe(JSON.stringify(Schema.encodeSync(Schema.Array(FlowRun))(runs)))
        const answered = yield* request("POST", "/flow_runs/filter", { body: { flows: { name: { any_: ["wire"] } } } })
        expect(answered.headers.get("content-type")).toBe("application/json")
        expect(answered.body.map((r) => r.id)).toEqual(runs.map((r) => r.id))

        const schemaDetails = Schema.decodeUnknownSync(StateDetails)
        const details: Array<unknown> = [
          {},
          { flow_run_id: MISSING, scheduled_time: "2031-01-01T00:00:00.000Z", extra: 1 },
          { deferred: null, untrackable_result: true, run_input_keyset: { a: "b" } },
          { pause_timeout: "2031-01-01T10:00:00+02:00", retriable: false, cache_key: "c" }
        ]
        for (const raw of details) expect(decodeStateDetails(raw)).toEqual(schemaDetails(raw))
        for (const raw of details) expect(JSON.stringify(decodeStateDetails(raw))).toBe(JSON.stringify(schemaDetails(raw)))
        for (const bad of [{ flow_run_id: "not-a-uuid" }, { scheduled_time: "never" }, { untrackable_result: null }]) {
          expect(() => decodeStateDetails(bad)).toThrow()
        }
        const schemaPolicy = Schema.decodeUnknownSync(FlowRunPolicy)
        for (const raw of [{}, { max_retries: 3, pause_keys: null, resuming: null }, { retry_type: "reschedule", extra: true }]) {
          expect(JSON.stringify(decodePolicy(raw))).toBe(JSON.stringify(schemaPolicy(raw)))
        }
        for (const bad of [{ max_retries: 1.5 }, { retry_type: "later" }, { pause_keys: [1] }]) {
          expect(() => decodePolicy(bad)).toThrow()
        }
      })
    )

    it.effect("a page written by the database is the page the schema encodes, estimates, defaults and odd rows included", () =>
      Effect.gen(function* () {
        const repo = yield* FlowRunsRepo
        const sql = yield* SqlClient.SqlClient
        const flow = (yield* post("/flows/", { name: "db-json" })).id
        yield* post("/work_pools/", { name: "db-json-pool", type: "process" })
        yield* post("/work_pools/db-json-pool/queues/", { name: "first-name" })
        const deployment = idOf(yield* post("/deployments/", { name: "d", flow_id: flow, work_pool_name: "db-json-pool", work_queue_name: "first-name" }))
        const made = [
          yield* post(`/deployments/${deployment}/create_flow_run`, { tags: ["t"], parameters: { n: { deep: [1, null, "x"] }, "10": 1, b: 2 } }),
          yield* post("/flow_runs/", { flow_id: flow, labels: { team: "x" }, state: { type: "RUNNING" } }),
          yield* post("/flow_runs/", { flow_id: flow, state: { type: "SCHEDULED", state_details: { scheduled_time: iso(BASE) } } }),
          yield* post("/flow_runs/", { flow_id: flow, state: { type: "PAUSED", state_details: { pause_timeout: iso(BASE), pause_reschedule: true } } }),
          yield* post("/flow_runs/", { flow_id: flow, state: { type: "COMPLETED" } }),
          yield* post("/flow_runs/", { flow_id: flow, job_variables: { env: { A: "1" } } }),
          yield* post("/flow_runs/", { flow_id: flow })
        ].map(idOf)
        const [fromDeployment, running, late, paused, completed, startedLate, stateless] = made
        const at = new Date(yield* TestClock.currentTimeMillis)
        // Times to the microsecond, as other writers (and the bench's seed) store them.
        const before = (seconds: number) => new Date(at.getTime() - seconds * 1000).toISOString().replace("Z", "789Z")
        yield* sql`UPDATE flow_run SET state_timestamp = ${before(90.25)}::timestamptz, total_run_time = 0.1::float8 + 0.2::float8 WHERE id = ${running}`
        yield* sql`UPDATE flow_run SET expected_start_time = ${before(3600)}::timestamptz, empirical_policy = '{"max_retries": 2}' WHERE id = ${late}`
        yield* sql`UPDATE flow_run_state SET state_details = ${JSON.stringify({ scheduled_time: "2031-01-01T00:00:00.123456Z", pause_key: "k" })}::jsonb, data = NULL
          WHERE flow_run_id = ${paused}`
        yield* sql`UPDATE flow_run SET expected_start_time = ${before(600)}::timestamptz, start_time = NULL, empirical_policy = '{}' WHERE id = ${completed}`
        yield* sql`UPDATE flow_run SET expected_start_time = ${before(7200)}::timestamptz, start_time = ${before(60)}::timestamptz,
          created_by = '{"id": null, "type": "AUTOMATION", "display_value": "nightly"}', labels = NULL WHERE id = ${startedLate}`
        yield* sql`UPDATE flow_run SET state_id = NULL, state_type = NULL, state_name = NULL, created_by = 'null' WHERE id = ${stateless}`
        // The queue's current name is answered, not the one the run was made with.
        yield* request("PATCH", "/work_pools/db-json-pool/queues/first-name", { body: { name: "second-name" } })
        expect(fromDeployment).toBeDefined()

        const query = { flows: { operator: "and_" as const, name: { any_: ["db-json"] } }, limit: 200, offset: 0 }
        for (const sort of ["ID_DESC", "EXPECTED_START_TIME_ASC", "START_TIME_DESC", "NAME_ASC"] as const) {
          const records = yield* repo.filter({ ...query, sort })
          expect(records).toHaveLength(made.length)
          const encoded = JSON.parse(JSON.stringify(Schema.encodeSync(Schema.Array(FlowRun))(records)))
          const written = (yield* repo.filterJson({ ...query, sort })).map((text) => JSON.parse(text))
          expect(written, sort).toEqual(encoded)
          // Key for key in the schema's order, nested objects too.
          const keys = (runs: Array<Record<string, any>>) =>
            runs.map((r) => [Object.keys(r), Object.keys(r.empirical_policy), r.state && Object.keys(r.state), r.state && Object.keys(r.state.state_details)])
          expect(keys(written)).toEqual(keys(encoded))
        }
        const byId = new Map<string, Record<string, any>>(
          (yield* repo.filterJson({ ...query, sort: "ID_DESC" })).map((text) => JSON.parse(text) as Record<string, any>).map((r) => [r.id, r])
        )
        expect(byId.get(running)!.estimated_run_time).toBeCloseTo(90.25 + 0.3, 9)
        expect(byId.get(late)!.estimated_start_time_delta).toBe(3600)
        expect(byId.get(late)!.empirical_policy).toEqual({ max_retries: 2, retry_delay_seconds: 0, retries: null, retry_delay: null, pause_keys: [], resuming: false, retry_type: null })
        expect(byId.get(completed)!.estimated_start_time_delta).toBe(0)
        expect(byId.get(startedLate)!.estimated_start_time_delta).toBe(7140)
        expect(byId.get(paused)!.state.state_details.scheduled_time).toBe("2031-01-01T00:00:00.123Z")
        expect(byId.get(stateless)!.state).toBeNull()
        expect(byId.get(fromDeployment)!.work_queue_name).toBe("second-name")
        expect(byId.get(fromDeployment)!.work_pool_name).toBe("db-json-pool")

        // What the route answers.
        const answered = yield* request("POST", "/flow_runs/filter", { body: { ...query, sort: "ID_DESC" } })
        expect(answered.status).toBe(200)
        expect(answered.headers.get("content-type")).toBe("application/json")
        expect(answered.body).toEqual(JSON.parse(JSON.stringify(Schema.encodeSync(Schema.Array(FlowRun))(yield* repo.filter({ ...query, sort: "ID_DESC" })))))
        expect((yield* request("POST", "/flow_runs/filter", { body: { flows: { name: { any_: ["no-such-flow"] } } } })).body).toEqual([])
        // paginate: the same page, with the count.
        for (const [limit, page] of [[3, 1], [3, 3], [0, 1], [200, 2]] as const) {
          const paged = yield* request("POST", "/flow_runs/paginate", { body: { flows: query.flows, sort: "NAME_ASC", limit, page } })
          expect(paged.status).toBe(200)
          const records = yield* repo.filter({ ...query, sort: "NAME_ASC", limit, offset: (page - 1) * limit })
          expect(paged.body).toEqual({
            results: JSON.parse(JSON.stringify(Schema.encodeSync(Schema.Array(FlowRun))(records))),
            count: made.length,
            limit,
            pages: limit === 0 ? 0 : Math.ceil(made.length / limit),
            page
          })
        }
      })
    )
  })
})
