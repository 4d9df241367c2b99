/**
 * Templates built to exhaust the server (allocations of hundreds of millions of items, doubling
 * strings and lists, blowing-up filters, recursion, loops over loops) at every place the server renders
 * one: run parameters (create_flow_run, its bulk form, a deployment's PATCH), resume input, and
 * automation actions, run directly and by the triggers service. Each is refused for its own request or
 * action, quickly, with a message naming the limit, and the server keeps answering.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, TestClock } from "effect"
import { Automation } from "../../src/automations/schemas.ts"
import { runBackgroundServices } from "../../src/services/registry.ts"
import { blockDocument, outcome, perform as performAction } from "../support/actions.ts"
import { makeDeployment, makeFlow, ok, okAs } from "../support/api.ts"
import { eventually } from "../support/eventually.ts"
import { receiver } from "../support/receiver.ts"
import { stillServing, timed } from "../support/timing.ts"
import { buildInServer, request, testServer } from "../support/server.ts"

const jinja = (template: string) => ({ __prefect_kind: "jinja", template })

const RANGE = "{{ range(200000000) | length }}"
const RANGE_HIDDEN = "{% set n = 200000000 %}{{ range(n) | length }}"
const DOUBLING =
  "{% set ns = namespace(x='ab') %}{% for i in range(100) %}{% for j in range(100) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}{% endfor %}{{ ns.x | length }}"
const LIST_DOUBLING =
  "{% set ns = namespace(x=[1]) %}{% for i in range(100) %}{% for j in range(100) %}{% set ns.x = ns.x + ns.x %}{% endfor %}{% endfor %}{{ ns.x | length }}"
const INDENT = "{{ 'a\\nb' | indent(1000000000) }}"
const REPLACE = "{% set ns = namespace(x='aaaaaaaaaa') %}{% for i in range(100) %}{% set ns.x = ns.x.replace('a', 'aaaaaaaaaa') %}{% endfor %}"
const RECURSION = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"
const FAN_OUT = "{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}"
/** About 280,000 steps: within the step limit alone, two of them are not. */
const HEAVY = `{% for i in range(100) %}{% for j in range(100) %}{{ ${Array(7).fill("i + j").join(" + ")} }}{% endfor %}{% endfor %}`

const RANGE_MESSAGE = "Range too big. The sandbox blocks ranges larger than MAX_TEMPLATE_RANGE=100."
const TOO_LARGE = /more than 1,000,000 characters/
const TOO_LONG = /Template rendering took more than (500,000 steps|500 ms) \(the limit of the templates of one request or automation action\)\.$/
const TOO_DEEP = /Template nests expressions or macro calls more than 500 deep\.$/

/** Performs one action of a stored automation as the triggers service would, quickly; its outcome event. */
const perform = (automationId: string, action: Record<string, unknown>) =>
  Effect.gen(function* () {
    const { value: events, ms } = yield* timed(performAction(automationId, action))
    expect(ms).toBeLessThan(1000)
    return outcome(events)
  })

describe("hostile templates", () => {
  it.layer(testServer(), { timeout: 120_000 })((it) => {
    it.effect("create_flow_run refuses each with the hydration 400, quickly, and the server keeps answering", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("hostile-runs")
        const deployment = yield* makeDeployment({ name: "hostile-runs", flow_id: flowId, parameters: { fixed: 1 } })
        const cases: Array<[string, string | RegExp]> = [
          [RANGE, RANGE_MESSAGE],
          [RANGE_HIDDEN, RANGE_MESSAGE],
          [DOUBLING, TOO_LARGE],
          [LIST_DOUBLING, TOO_LARGE],
          [INDENT, /^indent\(1000000000\) would make more than 1,000,000 characters/],
          [REPLACE, TOO_LARGE],
          [RECURSION, TOO_DEEP],
          [FAN_OUT, TOO_LONG]
        ]
        for (const [template, message] of cases) {
          const { value: res, ms } = yield* timed(
            request("POST", `/deployments/${deployment.id}/create_flow_run`, { body: { parameters: { x: jinja(template) } } })
          )
          expect(res.status, template).toBe(400)
          expect(res.body.detail, template).toMatch(/^Error hydrating flow run parameters: Invalid jinja: /)
          expect((res.body.detail as string).replace("Error hydrating flow run parameters: Invalid jinja: ", ""), template).toMatch(message)
          expect(ms, template).toBeLessThan(1000)
          yield* stillServing
        }
        // Templates that keep within the limits still render: 1,600 steps, a tenth of the time budget
        // or less even on a slow, busy machine (10,000 steps took more than the budget there).
        const fine = ok(
          yield* request("POST", `/deployments/${deployment.id}/create_flow_run`, {
            body: { parameters: { x: jinja("{% for i in range(40) %}{% for j in range(40) %}{{ i * j }}{% endfor %}{% endfor %}"), y: jinja("{{ 'hi' | upper }}") } }
          }),
          201
        )
        expect(fine.parameters.y).toBe("HI")
        expect(fine.parameters.x).toHaveLength(4_400)
      }))

    it.effect("the templates of one request share one budget, and /health answers while one renders", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("hostile-bulk")
        const deployment = yield* makeDeployment({ name: "hostile-bulk", flow_id: flowId })
        // Fifty templates of a request spend one budget: the request ends within it, not fifty times it.
        const many = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`p${i}`, jinja(HEAVY)]))
        const { value: res, ms } = yield* timed(request("POST", `/deployments/${deployment.id}/create_flow_run`, { body: { parameters: many } }))
        expect(res.status).toBe(400)
        expect(res.body.detail).toMatch(/Invalid jinja: Template rendering took more than/)
        expect(ms).toBeLessThan(1500)
        // So do the runs of a bulk request, each failing alone.
        const bulk = yield* timed(
          request("POST", `/deployments/${deployment.id}/create_flow_run/bulk`, {
            body: [{ parameters: { x: jinja(FAN_OUT) } }, { parameters: { x: jinja(FAN_OUT) } }, { parameters: { x: jinja("{{ 1 + 1 }}") } }]
          })
        )
        expect(bulk.ms).toBeLessThan(1500)
        const results = ok(bulk.value, 200).results
        expect(results.map((r) => r.status)).toEqual(["FAILED", "FAILED", "FAILED"])
        expect(results[0].error).toMatch(/Invalid jinja: Template rendering took more than/)

        // While a request renders for as long as it may, another one waits less than a second.
        const slow = yield* Effect.fork(request("POST", `/deployments/${deployment.id}/create_flow_run`, { body: { parameters: { x: jinja(FAN_OUT) } } }))
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
        yield* stillServing
        expect((yield* slow.await)._tag).toBe("Success")
      }))

    it.effect("deployments: a template that cannot render is refused when stored; one that blows up, when rendered", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("hostile-deployments")
        const refused = yield* request("POST", "/deployments/", {
          body: { name: "bad", flow_id: flowId, parameters: { outer: { inner: jinja("{% for x in y %}") } } }
        })
        expect(refused.status).toBe(422)
        expect(refused.body.detail).toEqual([
          {
            loc: ["body", "parameters", "outer", "inner", "template"],
            msg: expect.stringMatching(/^Value error, Invalid jinja: Unexpected end of template\. The innermost block that needs to be closed is 'for'\.$/),
            type: "value_error",
            input: "{% for x in y %}",
            ctx: { error: {} }
          }
        ])
        const literalRange = yield* request("POST", "/deployments/", { body: { name: "bad", flow_id: flowId, parameters: { x: jinja(RANGE) } } })
        expect(literalRange.status).toBe(422)
        expect(literalRange.body.detail[0].msg).toBe(`Value error, Invalid jinja: ${RANGE_MESSAGE}`)

        // Stored (it parses and keeps within the loop limits), refused each time a run renders it.
        const stored = ok(yield* request("POST", "/deployments/", { body: { name: "stored", flow_id: flowId, parameters: { x: jinja(DOUBLING) } } }), 201)
        const run = yield* request("POST", `/deployments/${stored.id}/create_flow_run`, { body: {} })
        expect(run.status).toBe(400)
        expect(run.body.detail).toMatch(TOO_LARGE)
        // A PATCH renders the parameters it is sent.
        const patched = yield* timed(request("PATCH", `/deployments/${stored.id}`, { body: { parameters: { x: jinja(LIST_DOUBLING) } } }))
        expect(patched.value.status).toBe(400)
        expect(patched.value.body.detail).toMatch(/^Error hydrating deployment parameters: Invalid jinja: .*more than 1,000,000 characters/)
        expect(patched.ms).toBeLessThan(1000)
        yield* stillServing
      }))

    it.effect("resume input that blows up is refused for that resume, the run staying paused", () =>
      Effect.gen(function* () {
        const flowId = (yield* request("POST", "/flows/", { body: { name: "hostile-resume" } })).body.id
        const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })).body
        yield* TestClock.adjust("1 second")
        yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "RUNNING" } } })
        yield* TestClock.adjust("1 second")
        const schema = { type: "object", properties: { answer: { type: "string" } } }
        yield* request("POST", `/flow_runs/${run.id}/input`, { body: { key: "hostile-schema", value: JSON.stringify(schema) } })
        yield* request("POST", `/flow_runs/${run.id}/set_state`, {
          body: { state: { type: "PAUSED", state_details: { run_input_keyset: { schema: "hostile-schema", response: "hostile-response", description: "d" } } } }
        })
        for (const [template, message] of [[RANGE_HIDDEN, RANGE_MESSAGE], [DOUBLING, TOO_LARGE], [FAN_OUT, TOO_LONG]] as const) {
          const { value: res, ms } = yield* timed(request("POST", `/flow_runs/${run.id}/resume`, { body: { run_input: { answer: jinja(template) } } }))
          expect(res.status).toBe(200)
          expect(res.body).toMatchObject({ status: "REJECT", state: { type: "PAUSED" }, details: { type: "abort_details" } })
          expect(res.body.details.reason).toMatch(/^Error hydrating run input: Invalid jinja: /)
          expect(res.body.details.reason).toMatch(message)
          expect(ms).toBeLessThan(1000)
          yield* stillServing
        }
        const resumed = yield* request("POST", `/flow_runs/${run.id}/resume`, { body: { run_input: { answer: jinja("{{ 'yes' }}") } } })
        expect(resumed.body).toMatchObject({ status: "ACCEPT", state: { type: "RUNNING" } })
      }))

    it.effect("template validation answers the reference's 422 for limits, quickly", () =>
      Effect.gen(function* () {
        const range = yield* request("POST", "/templates/validate", { body: RANGE, headers: { "content-type": "text/plain" } })
        expect(range.status).toBe(422)
        expect(range.body).toEqual({ error: { line: 0, message: RANGE_MESSAGE, source: RANGE } })
        const spaces = `{{ x${" ".repeat(500_000)}}}`
        const { value: res, ms } = yield* timed(request("POST", "/automations/templates/validate", { body: spaces, headers: { "content-type": "text/plain" } }))
        expect(res.status).toBe(422)
        expect(res.body.error.message).toMatch(/^Contains too much whitespace in a row/)
        expect(ms).toBeLessThan(1000)
        // Rendering-time limits are not known from the text: such a template is valid.
        expect((yield* request("POST", "/templates/validate", { body: DOUBLING, headers: { "content-type": "text/plain" } })).status).toBe(204)
      }))

    it.effect("an action whose template blows up fails, with the reason in its failed event", () =>
      Effect.scoped(Effect.gen(function* () {
        const automation = okAs(
          Automation,
          yield* request("POST", "/automations/", { body: { name: "hostile", trigger: { posture: "Reactive", expect: ["never"] }, actions: [{ type: "do-nothing" }] } }),
          201
        )
        const hook = yield* receiver()
        const webhook = yield* blockDocument("webhook", "hostile-hook", { url: `${hook.url}/hook` })
        const flowId = yield* makeFlow("hostile-action")
        const deployment = yield* makeDeployment({ name: "hostile-action", flow_id: flowId })

        for (const [template, message] of [[RANGE_HIDDEN, RANGE_MESSAGE], [DOUBLING, TOO_LARGE], [INDENT, /indent\(1000000000\) would make more than/], [RECURSION, TOO_DEEP], [FAN_OUT, TOO_LONG]] as const) {
          const failed = yield* perform(automation.id, { type: "call-webhook", block_document_id: webhook.id, payload: template })
          expect(failed.event).toBe("prefect.automation.action.failed")
          expect(failed.payload.reason).toMatch(/^Template rendering failed: /)
          expect(failed.payload.reason).toMatch(message)
          expect(failed.payload.template_error).toMatch(message)
          expect(failed.payload.template_source).toBe(template)
          yield* stillServing
        }
        expect(hook.requests).toHaveLength(0)

        const notification = yield* blockDocument("custom-webhook", "hostile-notify", { name: "n", url: `${hook.url}/notify`, json_data: { text: "{{body}}" } })
        const subject = yield* perform(automation.id, { type: "send-notification", block_document_id: notification.id, subject: DOUBLING, body: "fine" })
        expect(subject.payload.reason).toMatch(TOO_LARGE)

        const runDeployment = yield* perform(automation.id, { type: "run-deployment", deployment_id: deployment.id, parameters: { x: LIST_DOUBLING } })
        expect(runDeployment.event).toBe("prefect.automation.action.failed")
        expect(runDeployment.payload.reason).toMatch(/^Unable to create flow run from deployment: Invalid jinja: .*more than 1,000,000 characters/)
        const stored = yield* perform(automation.id, { type: "run-deployment", deployment_id: deployment.id, parameters: { x: jinja(FAN_OUT) } })
        expect(stored.payload.reason).toMatch(/Template rendering took more than/)
        yield* stillServing
      })))

    it.effect("automations are refused when stored with a template that cannot render", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/automations/", {
          body: { name: "refused", trigger: { posture: "Reactive", expect: ["x"] }, actions: [{ type: "run-deployment", source: "inferred", parameters: { x: RANGE } }] }
        })
        expect(res.status).toBe(422)
        expect(JSON.stringify(res.body)).toContain(RANGE_MESSAGE)
      }))

    it.effect("the triggers service survives an automation whose action blows up, and goes on acting", () =>
      Effect.scoped(
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 10, 24, 9, 0, 0))
          yield* buildInServer(runBackgroundServices((s) => s.name === "triggers" || s.name === "event_persister"))
          const hook = yield* receiver()
          const webhook = yield* blockDocument("webhook", "hostile-e2e", { url: `${hook.url}/e2e` })
          const flowId = yield* makeFlow("hostile-e2e")
          const deployment = yield* makeDeployment({ name: "hostile-e2e", flow_id: flowId })
          const automation = (name: string, expectEvent: string, actions: Array<Record<string, unknown>>) =>
            Effect.map(
              request("POST", "/automations/", {
                body: { name, trigger: { type: "event", posture: "Reactive", expect: [expectEvent], match: { "prefect.resource.id": "hostile.*" }, threshold: 1, within: 0 }, actions }
              }),
              (res) => ok(res, 201)
            )
          const hostile = yield* automation("hostile", "hostile.happened", [{ type: "call-webhook", block_document_id: webhook.id, payload: DOUBLING }])
          yield* automation("pauser", "hostile.happened", [{ type: "pause-deployment", deployment_id: deployment.id }])
          yield* automation("resumer", "hostile.later", [{ type: "resume-deployment", deployment_id: deployment.id }])
          const emit = (event: string) =>
            Effect.gen(function* () {
              const at = new Date(yield* Clock.currentTimeMillis).toISOString()
              const res = yield* request("POST", "/events/", {
                body: [{ id: crypto.randomUUID(), occurred: at, event, resource: { "prefect.resource.id": "hostile.thing" }, related: [], payload: {} }]
              })
              expect([200, 204]).toContain(res.status)
            })

          yield* emit("hostile.happened")
          const failed = yield* eventually(
            Effect.gen(function* () {
              const res = yield* request("POST", "/events/filter", {
                body: { filter: { resource: { id: [`prefect.automation.${hostile.id}`] }, event: { prefix: ["prefect.automation.action.failed"] } } }
              })
              const events = ok(res, 200).events
              expect(events).toHaveLength(1)
              return events[0]
            }),
            { nudgeClock: true }
          )
          expect(failed.payload.reason).toMatch(TOO_LARGE)
          yield* eventually(Effect.map(request("GET", `/deployments/${deployment.id}`), (res) => expect(ok(res, 200).paused).toBe(true)), { nudgeClock: true })
          yield* stillServing

          // Still acting on what comes next.
          yield* emit("hostile.later")
          yield* eventually(Effect.map(request("GET", `/deployments/${deployment.id}`), (res) => expect(ok(res, 200).paused).toBe(false)), { nudgeClock: true })
          expect(hook.requests).toHaveLength(0)
        })
      ))
  })
})
