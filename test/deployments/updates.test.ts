import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const interval = (seconds: number) => ({ schedule: { interval: seconds }, active: false })

describe("schedules written concurrently", () => {
  it.layer(testServer(), { timeout: 120_000 })((it) => {
    it.effect("creating and replacing a deployment's schedules at once never answers 500, each create answers what it stored", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("concurrent-schedules")
        const deployment = ok(yield* request("POST", "/deployments/", { body: { name: "concurrent", flow_id: flowId, schedules: [interval(60)] } }))
        const create = (round: number) =>
          Effect.map(request("POST", `/deployments/${deployment.id}/schedules`, { body: [interval(1000 + round), interval(2000 + round)] }), (answer) => ({ kind: "create", round, answer }))
        const replace = (round: number) =>
          Effect.map(request("PATCH", `/deployments/${deployment.id}`, { body: { schedules: [interval(3000 + round)] } }), (answer) => ({ kind: "replace", round, answer }))
        const upsert = (round: number) =>
          Effect.map(
            request("POST", "/deployments/", { body: { name: "concurrent", flow_id: flowId, schedules: [interval(4000 + round)] } }),
            (answer) => ({ kind: "upsert", round, answer })
          )
        const rounds = Array.from({ length: 12 }, (_, round) => round)
        const answers = yield* Effect.all(rounds.flatMap((round) => [create(round), replace(round), upsert(round)]), { concurrency: "unbounded" })
        const failures = answers.filter(({ answer }) => answer.status >= 500).map(({ kind, answer }) => `${kind}: ${answer.status} ${answer.text}`)
        expect(failures).toEqual([])
        for (const { kind, round, answer } of answers) {
          if (kind === "create") {
            // The schedules this request inserted, in its order, whatever else happened meanwhile.
            expect(answer.status).toBe(201)
            expect(answer.body.map((s: any) => s.schedule.interval)).toEqual([1000 + round, 2000 + round])
            for (const schedule of answer.body) expect(schedule.deployment_id).toBe(deployment.id)
          } else if (kind === "replace") expect(answer.status).toBe(204)
          else {
            expect([200, 201]).toContain(answer.status)
            expect(answer.body.id).toBe(deployment.id)
          }
        }
        // Still serving, and the deployment reads back whole.
        const after = ok(yield* request("GET", `/deployments/${deployment.id}`), 200)
        expect(after.schedules.length).toBeGreaterThan(0)
        expect((yield* request("GET", "/health")).status).toBe(200)
      })
    )

    it.effect("a create racing the deletion of its deployment is a 404 or a 201 with its schedules, never a 500", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("deleted-while-scheduling")
        const statuses: Array<number> = []
        for (let round = 0; round < 6; round++) {
          const deployment = ok(yield* request("POST", "/deployments/", { body: { name: `doomed-${round}`, flow_id: flowId } }))
          const [created, deleted] = yield* Effect.all([
            request("POST", `/deployments/${deployment.id}/schedules`, { body: [interval(60), interval(120)] }),
            request("DELETE", `/deployments/${deployment.id}`)
          ], { concurrency: "unbounded" })
          expect(deleted.status).toBe(204)
          expect([201, 404], created.text).toContain(created.status)
          if (created.status === 201) expect(created.body.map((s: any) => s.schedule.interval)).toEqual([60, 120])
          statuses.push(created.status)
        }
        expect(statuses.length).toBe(6)
      })
    )
  })
})
