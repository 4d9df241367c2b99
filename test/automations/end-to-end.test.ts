import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { runBackgroundServices } from "../../src/services/registry.ts"
import { Automation } from "../../src/automations/schemas.ts"
import { FlowRun } from "../../src/flow-runs/schemas.ts"
import { makeDeployment, makeFlow, ok, okAs } from "../support/api.ts"
import { receiver } from "../support/receiver.ts"
import { buildInServer, request, testServer } from "../support/server.ts"
import { eventually } from "../support/eventually.ts"

const setState = (id: string, type: string) =>
  Effect.map(request("POST", `/flow_runs/${id}/set_state`, { body: { state: { type } } }), (res) => ok(res, 200, 201))

describe("an automation end to end, with the triggers service running", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("3 failed runs of a deployment within 60 s pause the deployment and call a webhook", () =>
      Effect.scoped(
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 24, 9, 0, 0))
          yield* buildInServer(runBackgroundServices((s) => s.name === "triggers" || s.name === "event_persister"))
          const hook = yield* receiver()

          // Everything below goes through the HTTP API, as a client would do it.
          ok(yield* request("POST", "/block_types/install_system_block_types"), 200)
          const webhookType = ok(yield* request("GET", "/block_types/slug/webhook"), 200)
          const [webhookSchema] = ok(
            yield* request("POST", "/block_schemas/filter", { body: { block_schemas: { block_type_id: { any_: [webhookType.id] } } } }),
            200
          )
          const webhook = ok(
            yield* request("POST", "/block_documents/", {
              body: { name: "on-call", block_type_id: webhookType.id, block_schema_id: webhookSchema.id, data: { url: `${hook.url}/alerts` } }
            }),
            201
          )
          const flowId = yield* makeFlow("etl")
          const deployment = yield* makeDeployment({ name: "nightly", flow_id: flowId })
          const other = yield* makeDeployment({ name: "other", flow_id: flowId })
          const automation = okAs(
            Automation,
            yield* request("POST", "/automations/", {
              body: {
                name: "nightly keeps failing",
                trigger: {
                  type: "event",
                  posture: "Reactive",
                  expect: ["prefect.flow-run.Failed"],
                  match: { "prefect.resource.id": "prefect.flow-run.*" },
                  match_related: { "prefect.resource.id": `prefect.deployment.${deployment.id}` },
                  threshold: 3,
                  within: 60
                },
                actions: [
                  { type: "pause-deployment", source: "selected", deployment_id: deployment.id },
                  {
                    type: "call-webhook",
                    block_document_id: webhook.id,
                    payload: '{"text": "{{ automation.name }}: {{ event.resource[\'prefect.resource.name\'] }} failed"}'
                  }
                ]
              }
            }),
            201
          )

          const failRun = (deploymentId: string) =>
            Effect.gen(function* () {
              const run = okAs(FlowRun, yield* request("POST", `/deployments/${deploymentId}/create_flow_run`, { body: { name: `run-${Math.random().toString(36).slice(2, 8)}` } }), 201)
              yield* setState(run.id, "PENDING")
              yield* setState(run.id, "RUNNING")
              yield* setState(run.id, "FAILED")
              yield* TestClock.adjust(Duration.seconds(10))
              return run
            })

          // Two failures of this deployment and two of another: not yet.
          yield* failRun(deployment.id)
          yield* failRun(other.id)
          yield* failRun(deployment.id)
          yield* failRun(other.id)
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 500)))
          expect(ok(yield* request("GET", `/deployments/${deployment.id}`), 200).paused).toBe(false)
          expect(hook.requests).toHaveLength(0)

          // The third within the minute.
          const third = yield* failRun(deployment.id)
          yield* eventually(Effect.sync(() => expect(hook.requests).toHaveLength(1)), { nudgeClock: true })
          expect(JSON.parse(hook.requests[0]!.body)).toEqual({ text: `nightly keeps failing: ${third.name} failed` })
          yield* eventually(Effect.map(request("GET", `/deployments/${deployment.id}`), (res) => expect(ok(res, 200).paused).toBe(true)), { nudgeClock: true })
          expect(ok(yield* request("GET", `/deployments/${other.id}`), 200).paused).toBe(false)

          // The automation's own events tell the story.
          const story = yield* eventually(
            Effect.gen(function* () {
              const res = yield* request("POST", "/events/filter", {
                body: { filter: { resource: { id: [`prefect.automation.${automation.id}`] }, event: { prefix: ["prefect.automation.action.executed", "prefect.automation.triggered"] } } }
              })
              const events = ok(res, 200).events
              expect(events).toHaveLength(3)
              return events
            }),
            { nudgeClock: true }
          )
          expect(story.filter((e) => e.event === "prefect.automation.action.executed").map((e) => e.payload.action_type).sort()).toEqual([
            "call-webhook",
            "pause-deployment"
          ])
        })
      ))
  })
})
