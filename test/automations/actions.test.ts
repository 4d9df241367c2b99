import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import type { ReceivedEvent } from "../../src/events/schemas.ts"
import { FlowRun } from "../../src/flow-runs/schemas.ts"
import { WorkPool, WorkQueue } from "../../src/work-pools/schemas.ts"
import { anAutomation, blockDocument, eventAbout, outcome, perform as performAction } from "../support/actions.ts"
import { makeDeployment, makeFlow, ok, okAs } from "../support/api.ts"
import { receiver } from "../support/receiver.ts"
import { request, testServer } from "../support/server.ts"

const relatedTo = (kind: string, id: string) => ({ "prefect.resource.id": `prefect.${kind}.${id}`, "prefect.resource.role": kind })

/** Performs one action (with no triggering event unless given) and answers its action events. */
const perform = (automationId: string, action: Record<string, unknown>, event: ReceivedEvent | null = null, labels: Record<string, string> = {}) =>
  performAction(automationId, action, event, labels)

const readDeployment = (id: string) => Effect.map(request("GET", `/deployments/${id}`), (res) => ok(res, 200))
const readRun = (id: string) => Effect.map(request("GET", `/flow_runs/${id}`), (res) => ok(res, 200))
const setState = (id: string, state: Record<string, unknown>) => request("POST", `/flow_runs/${id}/set_state`, { body: { state } })

describe("automation actions", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("pause and resume deployments, selected or inferred from the event; a missing one fails the action", () =>
      Effect.gen(function* () {
        const automation = yield* anAutomation("deployments")
        const flowId = yield* makeFlow("acted-on")
        const deployment = yield* makeDeployment({ name: "acted-on", flow_id: flowId })
        const event = eventAbout("prefect.flow-run.x", [relatedTo("deployment", deployment.id)])
        const paused = outcome(yield* perform(automation.id, { type: "pause-deployment", deployment_id: deployment.id }, event))
        expect(paused.event).toBe("prefect.automation.action.executed")
        expect(paused.related).toContainEqual({ "prefect.resource.id": `prefect.deployment.${deployment.id}`, "prefect.resource.role": "target" })
        expect(paused.payload).toMatchObject({ action_type: "pause-deployment", action_index: 0, status_code: 200 })
        expect((yield* readDeployment(deployment.id)).paused).toBe(true)

        const resumed = outcome(yield* perform(automation.id, { type: "resume-deployment", source: "inferred" }, eventAbout("x.y", [relatedTo("deployment", deployment.id)])))
        expect(resumed.event).toBe("prefect.automation.action.executed")
        expect((yield* readDeployment(deployment.id)).paused).toBe(false)

        const missing = outcome(yield* perform(automation.id, { type: "pause-deployment", deployment_id: "99999999-0000-4000-8000-000000000000" }, eventAbout("x.z")))
        expect(missing.event).toBe("prefect.automation.action.failed")
        expect(missing.payload).toMatchObject({ reason: "Unexpected status from 'pause-deployment' action: 404", status_code: 404 })
        const uninferable = outcome(yield* perform(automation.id, { type: "pause-deployment", source: "inferred" }, eventAbout("x.w")))
        expect(uninferable.payload.reason).toBe("No deployment could be inferred")
      }))

    it.effect("run a deployment with parameters rendered from the event, created by the automation", () =>
      Effect.gen(function* () {
        const automation = yield* anAutomation("runner")
        const flowId = yield* makeFlow("run-me")
        const deployment = yield* makeDeployment({ name: "run-me", flow_id: flowId, parameters: { fixed: 1 } })
        const event = eventAbout("prefect.flow-run.abc", [relatedTo("deployment", deployment.id)])
        const done = outcome(
          yield* perform(
            automation.id,
            {
              type: "run-deployment",
              source: "inferred",
              parameters: { who: "{{ event.resource['prefect.resource.name'] }}", greeting: "hello {{ event.event }}", n: "{{ 40 + 2 }}" },
              schedule_after: 60
            },
            event
          )
        )
        expect(done.event, JSON.stringify(done.payload)).toBe("prefect.automation.action.executed")
        expect(done.payload.status_code).toBe(201)
        const runRef = done.related.find((r) => r["prefect.resource.role"] === "flow-run")!
        const run = yield* readRun((runRef["prefect.resource.id"] as string).replace("prefect.flow-run.", ""))
        expect(run.parameters).toEqual({ fixed: 1, who: "the resource", greeting: "hello test.happened", n: 42 })
        expect(run.created_by).toEqual({ type: "AUTOMATION", id: automation.id, display_value: "runner" })
        expect(run.state.type).toBe("SCHEDULED")
        expect(run.idempotency_key).toMatch(new RegExp(`^automation ${automation.id}, action 0, invocation `))
      }))

    it.effect("change, cancel, suspend, resume and delete the flow run the event (or the firing's labels) names", () =>
      Effect.gen(function* () {
        const automation = yield* anAutomation("flow runs")
        const flowId = yield* makeFlow("runs-acted-on")
        const deployment = yield* makeDeployment({ name: "runs-acted-on", flow_id: flowId })
        const newRun = Effect.gen(function* () {
          const run = okAs(FlowRun, yield* request("POST", `/deployments/${deployment.id}/create_flow_run`, { body: {} }), 201)
          yield* setState(run.id, { type: "PENDING" })
          yield* setState(run.id, { type: "RUNNING" })
          yield* TestClock.adjust("1 second")
          return run.id
        })
        const aboutRun = (id: string) => eventAbout(`prefect.flow-run.${id}`)

        const cancelled = yield* newRun
        expect(outcome(yield* perform(automation.id, { type: "cancel-flow-run" }, aboutRun(cancelled))).event).toBe("prefect.automation.action.executed")
        const cancelledRun = yield* readRun(cancelled)
        expect(cancelledRun.state).toMatchObject({ type: "CANCELLING", message: `Cancelled by Automation ${automation.id}` })

        const changed = yield* newRun
        // From the firing's for_each labels when the event is about something else.
        yield* perform(automation.id, { type: "change-flow-run-state", state: "FAILED", name: "Gave up", force: true }, eventAbout("x"), {
          "prefect.resource.id": `prefect.flow-run.${changed}`
        })
        expect((yield* readRun(changed)).state).toMatchObject({ type: "FAILED", name: "Gave up", message: `State changed by Automation ${automation.id}` })
        // A transition the orchestration rules refuse fails the action.
        const refused = outcome(yield* perform(automation.id, { type: "change-flow-run-state", state: "PENDING" }, aboutRun(cancelled)))
        expect(refused.event).toBe("prefect.automation.action.failed")
        expect(refused.payload.reason).toMatch(/^Failed to set state: /)

        const suspended = yield* newRun
        expect(outcome(yield* perform(automation.id, { type: "suspend-flow-run" }, aboutRun(suspended))).event).toBe("prefect.automation.action.executed")
        expect((yield* readRun(suspended)).state).toMatchObject({ type: "PAUSED", name: "Suspended" })
        expect(outcome(yield* perform(automation.id, { type: "resume-flow-run" }, aboutRun(suspended))).event).toBe("prefect.automation.action.executed")
        expect((yield* readRun(suspended)).state).toMatchObject({ type: "SCHEDULED", name: "Resuming" })

        expect(outcome(yield* perform(automation.id, { type: "delete-flow-run" }, aboutRun(suspended))).event).toBe("prefect.automation.action.executed")
        expect((yield* request("GET", `/flow_runs/${suspended}`)).status).toBe(404)
        const nothing = outcome(yield* perform(automation.id, { type: "cancel-flow-run" }, eventAbout("x.q")))
        expect(nothing.payload.reason).toBe("No flow run could be inferred")
      }))

    it.effect("pause and resume work pools, work queues and automations", () =>
      Effect.gen(function* () {
        const automation = yield* anAutomation("infrastructure")
        const other = yield* anAutomation("the other one")
        const pool = okAs(WorkPool, yield* request("POST", "/work_pools/", { body: { name: "acted-pool" } }), 201)
        const queue = okAs(WorkQueue, yield* request("POST", "/work_pools/acted-pool/queues", { body: { name: "acted-queue" } }), 201)

        yield* perform(automation.id, { type: "pause-work-pool", source: "inferred" }, eventAbout("x", [relatedTo("work-pool", pool.id)]))
        expect(ok(yield* request("GET", "/work_pools/acted-pool"), 200).is_paused).toBe(true)
        const resumedPool = outcome(yield* perform(automation.id, { type: "resume-work-pool", work_pool_id: pool.id }, eventAbout("x")))
        expect(resumedPool.related).toContainEqual({ "prefect.resource.id": `prefect.work-pool.${pool.id}`, "prefect.resource.name": "acted-pool", "prefect.resource.role": "target" })
        expect(ok(yield* request("GET", "/work_pools/acted-pool"), 200).is_paused).toBe(false)

        yield* perform(automation.id, { type: "pause-work-queue", work_queue_id: queue.id }, eventAbout("x"))
        expect(ok(yield* request("GET", `/work_queues/${queue.id}`), 200)).toMatchObject({ is_paused: true, status: "PAUSED" })
        yield* perform(automation.id, { type: "resume-work-queue", source: "inferred" }, eventAbout(`prefect.work-queue.${queue.id}`))
        expect(ok(yield* request("GET", `/work_queues/${queue.id}`), 200).is_paused).toBe(false)

        yield* perform(automation.id, { type: "pause-automation", automation_id: other.id }, eventAbout("x"))
        expect(ok(yield* request("GET", `/automations/${other.id}`), 200).enabled).toBe(false)
        yield* perform(automation.id, { type: "resume-automation", source: "inferred" }, eventAbout(`prefect.automation.${other.id}`))
        expect(ok(yield* request("GET", `/automations/${other.id}`), 200).enabled).toBe(true)
      }))

    it.effect("call a webhook block with the rendered payload, and send notifications through notification blocks", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const automation = yield* anAutomation("outbound")
          const hook = yield* receiver()
          const webhook = yield* blockDocument("webhook", "local-hook", { url: `${hook.url}/hook`, method: "POST", headers: { "x-token": "s3cret" } })
          const called = outcome(
            yield* perform(
              automation.id,
              { type: "call-webhook", block_document_id: webhook.id, payload: '{"automation": "{{ automation.name }}", "event": "{{ event.event }}"}' },
              eventAbout("x")
            )
          )
          expect(called.event, JSON.stringify(called.payload)).toBe("prefect.automation.action.executed")
          expect(hook.requests).toHaveLength(1)
          expect(hook.requests[0]).toMatchObject({ method: "POST", url: "/hook", body: '{"automation": "outbound", "event": "test.happened"}' })
          expect(hook.requests[0]!.headers["x-token"]).toBe("s3cret")
          expect(hook.requests[0]!.headers["content-type"]).toBe("application/json")
          expect(called.payload).toMatchObject({ status_code: 200, response_body: '{"ok":true}' })
          // Credentials in the response are not recorded.
          expect(called.payload.response_headers["set-cookie"]).toBeUndefined()
          expect(called.related).toContainEqual({ "prefect.resource.id": `prefect.block-document.${webhook.id}`, "prefect.resource.role": "block", "prefect.resource.name": "local-hook" })

          const custom = yield* blockDocument("custom-webhook", "local-custom", {
            name: "ops",
            url: `${hook.url}/notify`,
            json_data: { text: "{{subject}}: {{body}}", token: "{{token}}" },
            secrets: { token: "t0k" }
          })
          const notified = outcome(
            yield* perform(automation.id, { type: "send-notification", block_document_id: custom.id, subject: "Alert", body: "{{ event.resource['prefect.resource.name'] }} failed" }, eventAbout("x"))
          )
          expect(notified.event, JSON.stringify(notified.payload)).toBe("prefect.automation.action.executed")
          expect(JSON.parse(hook.requests[1]!.body)).toEqual({ text: "Alert: the resource failed", token: "t0k" })

          const linked = outcome(yield* perform(automation.id, { type: "call-webhook", block_document_id: webhook.id, payload: "{{ automation | ui_url }}" }, eventAbout("x")))
          expect(linked.event).toBe("prefect.automation.action.executed")
          expect(hook.requests.at(-1)!.body).toMatch(new RegExp(`/automations/automation/${automation.id}$`))

          const notAWebhook = outcome(yield* perform(automation.id, { type: "call-webhook", block_document_id: custom.id }, eventAbout("x")))
          expect(notAWebhook.payload.reason).toBe("The referenced block was not a webhook block")
          const notANotifier = outcome(yield* perform(automation.id, { type: "send-notification", block_document_id: webhook.id, body: "x" }, eventAbout("x")))
          expect(notANotifier.payload.reason).toBe("The referenced block was not a notification block")
          const badTemplate = outcome(yield* perform(automation.id, { type: "call-webhook", block_document_id: webhook.id, payload: "{{ nothing() }}" }, eventAbout("x")))
          expect(badTemplate.event).toBe("prefect.automation.action.failed")
          expect(badTemplate.payload).toMatchObject({ template_source: "{{ nothing() }}", reason: expect.stringMatching(/^Template rendering failed: /) })

          const down = yield* blockDocument("webhook", "nowhere", { url: "http://127.0.0.1:9/nothing" })
          const unreachable = outcome(yield* perform(automation.id, { type: "call-webhook", block_document_id: down.id }, eventAbout("x")))
          expect(unreachable.event).toBe("prefect.automation.action.failed")
          expect(unreachable.payload.reason).toMatch(/^Webhook call failed: /)
        })
      ))
  })
})
