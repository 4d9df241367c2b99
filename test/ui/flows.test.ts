import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { makeDeployment, makeFlow, ok } from "../support/api.ts"
import { type Json, request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

/** A run of the flow in the given state, as created. */
const runOf = (flowId: string, state: Record<string, unknown>) =>
  Effect.map(request("POST", "/flow_runs/", { body: { flow_id: flowId, state } }), (res) => ok(res, 201))

describe("/ui/flows", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("count-deployments counts each flow's deployments, 0 for flows without, in the order asked", () =>
      Effect.gen(function* () {
        const flow1 = yield* makeFlow("count-1")
        const flow2 = yield* makeFlow("count-2")
        const flow3 = yield* makeFlow("count-3")
        for (let i = 0; i < 3; i++) yield* makeDeployment({ name: `My Deployment ${i}`, flow_id: flow1 })
        for (let i = 0; i < 2; i++) yield* makeDeployment({ name: `My Deployment ${i}`, flow_id: flow2 })

        const res = yield* request("POST", "/ui/flows/count-deployments", { body: { flow_ids: [flow1, flow2, flow3] } })
        expect(res.status).toBe(200)
        expect(res.body).toEqual({ [flow1]: 3, [flow2]: 2, [flow3]: 0 })
        // Keys in the order asked (each once), ids of nothing counted 0, written in lower case.
        const again = yield* request("POST", "/ui/flows/count-deployments", {
          body: { flow_ids: [flow3, MISSING, flow1.toUpperCase(), flow3] }
        })
        expect(again.text).toBe(JSON.stringify({ [flow3]: 0, [MISSING]: 0, [flow1]: 3 }))
        expect((yield* request("POST", "/ui/flows/count-deployments", { body: { flow_ids: [] } })).body).toEqual({})
      })
    )

    it.effect("count-deployments and next-runs refuse a body without ids, or ids that are not UUIDs (422)", () =>
      Effect.gen(function* () {
        for (const path of ["/ui/flows/count-deployments", "/ui/flows/next-runs"]) {
          const missing = yield* request("POST", path, { body: {} })
          expect(missing.status).toBe(422)
          expect(missing.body.detail).toEqual([expect.objectContaining({ loc: ["body", "flow_ids"], type: "missing" })])
          const bad = yield* request("POST", path, { body: { flow_ids: ["nope"] } })
          expect(bad.status).toBe(422)
          expect(bad.body.detail).toEqual([expect.objectContaining({ loc: ["body", "flow_ids", 0], type: "uuid_parsing" })])
        }
      })
    )

    it.effect("next-runs answers null for flows without a scheduled run", () =>
      Effect.gen(function* () {
        const flow1 = yield* makeFlow("next-none-1")
        const flow2 = yield* makeFlow("next-none-2")
        const res = yield* request("POST", "/ui/flows/next-runs", { body: { flow_ids: [flow1, flow2] } })
        expect(res.status).toBe(200)
        expect(res.body).toEqual({ [flow1]: null, [flow2]: null })
      })
    )

    it.effect("next-runs answers each flow's scheduled run due first, whatever runs of other states it has", () =>
      Effect.gen(function* () {
        const flow1 = yield* makeFlow("next-1")
        const flow2 = yield* makeFlow("next-2")
        const flow3 = yield* makeFlow("next-3")
        const at = (offsetMs: number) => new Date(Date.UTC(2026, 0, 1) + offsetMs).toISOString()
        yield* TestClock.setTime(Date.UTC(2026, 0, 1))
        const hour = 3_600_000

        // Created after a later one, and due first.
        yield* runOf(flow1, { type: "SCHEDULED", state_details: { scheduled_time: at(hour) } })
        const next1 = yield* runOf(flow1, { type: "SCHEDULED", state_details: { scheduled_time: at(0) } })
        const next2 = yield* runOf(flow2, { type: "SCHEDULED", state_details: { scheduled_time: at(hour) } })
        // Sooner, but not scheduled.
        yield* runOf(flow2, { type: "COMPLETED" })
        yield* runOf(flow3, { type: "RUNNING" })

        const res = yield* request("POST", "/ui/flows/next-runs", { body: { flow_ids: [flow1, flow2, flow3] } })
        expect(res.status).toBe(200)
        const simple = (run: Json) => ({
          id: run.id,
          flow_id: run.flow_id,
          name: run.name,
          state_name: run.state_name,
          state_type: run.state_type,
          next_scheduled_start_time: run.next_scheduled_start_time
        })
        expect(res.body).toEqual({ [flow1]: simple(next1), [flow2]: simple(next2), [flow3]: null })
        expect(res.body[flow1]).toEqual({
          id: next1.id,
          flow_id: flow1,
          name: next1.name,
          state_name: "Scheduled",
          state_type: "SCHEDULED",
          next_scheduled_start_time: at(0)
        })
        // The fields in the reference's order.
        expect(Object.keys(res.body[flow2])).toEqual(["id", "flow_id", "name", "state_name", "state_type", "next_scheduled_start_time"])
      })
    )

    it.effect("next-runs counts a run marked Late (still of type SCHEDULED)", () =>
      Effect.gen(function* () {
        const flow = yield* makeFlow("next-late")
        const late = yield* runOf(flow, { type: "SCHEDULED", name: "Late", state_details: { scheduled_time: "2025-01-01T00:00:00Z" } })
        yield* runOf(flow, { type: "SCHEDULED", state_details: { scheduled_time: "2030-01-01T00:00:00Z" } })
        const res = yield* request("POST", "/ui/flows/next-runs", { body: { flow_ids: [flow] } })
        expect(res.body[flow]).toMatchObject({ id: late.id, state_name: "Late", state_type: "SCHEDULED" })
      })
    )
  })
})
