/**
 * The 422 items of the real Api, as the reference (pydantic v2 behind FastAPI) words them: bounds
 * as `greater_than_equal`/`less_than_equal`/`greater_than` with their ctx, text that does not read
 * as a number or boolean as `*_parsing`, what pydantic's lax mode reads accepted, and rule checks
 * (`value_error`) with the input as sent and `ctx: {"error": {}}`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeDeployment, makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

/** The detail items of a request that must answer 422. */
const problems = (method: string, path: string, body?: unknown) =>
  Effect.map(request(method, path, body === undefined ? {} : { body }), (res) => {
    expect(res.status, JSON.stringify(res.body)).toBe(422)
    return res.body.detail
  })

describe("validation items", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("report every numeric bound as pydantic's own item, with its ctx", () =>
      Effect.gen(function* () {
        // The events page: 0 <= limit <= 50.
        expect(yield* problems("POST", "/events/filter", { limit: 51 })).toEqual([
          { loc: ["body", "limit"], msg: "Input should be less than or equal to 50", type: "less_than_equal", input: 51, ctx: { le: 50 } }
        ])
        expect(yield* problems("POST", "/events/filter", { limit: -1 })).toEqual([
          { loc: ["body", "limit"], msg: "Input should be greater than or equal to 0", type: "greater_than_equal", input: -1, ctx: { ge: 0 } }
        ])
        // The items the reference's client tests expect of a lease request (slots > 0, 60 <= lease_duration <= 86400).
        const lease = yield* problems("POST", "/v2/concurrency_limits/increment-with-lease", { names: ["x"], slots: 0, lease_duration: 10 })
        expect(lease).toEqual([
          { loc: ["body", "slots"], msg: "Input should be greater than 0", type: "greater_than", input: 0, ctx: { gt: 0 } },
          { loc: ["body", "lease_duration"], msg: "Input should be greater than or equal to 60", type: "greater_than_equal", input: 10, ctx: { ge: 60 } }
        ])
        expect(yield* problems("POST", `/v2/concurrency_limits/leases/${MISSING}/renew`, { lease_duration: 86_401 })).toEqual([
          {
            loc: ["body", "lease_duration"],
            msg: "Input should be less than or equal to 86400",
            type: "less_than_equal",
            input: 86_401,
            ctx: { le: 86_400 }
          }
        ])
        // A deployment's grace period (60 to 86400 seconds).
        expect(
          yield* problems("POST", "/deployments/", {
            name: "d",
            flow_id: MISSING,
            concurrency_options: { collision_strategy: "ENQUEUE", grace_period_seconds: 86_401 }
          })
        ).toEqual([
          {
            loc: ["body", "concurrency_options", "grace_period_seconds"],
            msg: "Input should be less than or equal to 86400",
            type: "less_than_equal",
            input: 86_401,
            ctx: { le: 86_400 }
          }
        ])
        // A pool's concurrency status: 0 <= flow_run_limit <= 200, page >= 1.
        ok(yield* request("POST", "/work_pools/", { body: { name: "bounds-pool", type: "process" } }), 201)
        expect(yield* problems("POST", "/work_pools/bounds-pool/concurrency_status", { flow_run_limit: 201, page: 0 })).toEqual([
          { loc: ["body", "page"], msg: "Input should be greater than or equal to 1", type: "greater_than_equal", input: 0, ctx: { ge: 1 } },
          {
            loc: ["body", "flow_run_limit"],
            msg: "Input should be less than or equal to 200",
            type: "less_than_equal",
            input: 201,
            ctx: { le: 200 }
          }
        ])
        // Bulk deletes take 1 to 50; a work queue's priority is positive.
        expect(yield* problems("POST", "/flows/bulk_delete", { limit: 0 })).toEqual([
          { loc: ["body", "limit"], msg: "Input should be greater than or equal to 1", type: "greater_than_equal", input: 0, ctx: { ge: 1 } }
        ])
        expect(yield* problems("POST", "/work_pools/bounds-pool/queues", { name: "q", priority: 0 })).toEqual([
          { loc: ["body", "priority"], msg: "Input should be greater than 0", type: "greater_than", input: 0, ctx: { gt: 0 } }
        ])
        // A duration's bound reads as pydantic writes a timedelta's.
        expect(
          yield* problems("POST", "/automations/", {
            name: "a",
            trigger: { posture: "Reactive", expect: ["x"], within: -5 },
            actions: [{ type: "do-nothing" }]
          })
        ).toEqual([
          {
            loc: ["body", "trigger", "within"],
            msg: "Input should be greater than or equal to 0 seconds",
            type: "greater_than_equal",
            input: -5,
            ctx: { ge: "0 seconds" }
          }
        ])
      }))

    it.effect("report list and text lengths as pydantic does", () =>
      Effect.gen(function* () {
        expect(yield* problems("POST", "/v2/concurrency_limits/increment", { names: [], slots: 1 })).toEqual([
          {
            loc: ["body", "names"],
            msg: "List should have at least 1 item after validation, not 0",
            type: "too_short",
            input: [],
            ctx: { field_type: "List", min_length: 1, actual_length: 0 }
          }
        ])
        // The length is checked before the characters, as the reference's field does.
        const name = "Not Valid!".repeat(30)
        expect(yield* problems("POST", "/variables/", { name, value: 1 })).toEqual([
          { loc: ["body", "name"], msg: "String should have at most 255 characters", type: "string_too_long", input: name, ctx: { max_length: 255 } }
        ])
      }))

    it.effect("refuse more than 50 retry delays and a negative jitter factor at the policy's field (the reference's task run tests)", () =>
      Effect.gen(function* () {
        const flowRun = ok(yield* request("POST", "/flow_runs/", { body: { flow_id: yield* makeFlow("policy-flow") } }), 201)
        const taskRun = (policy: Record<string, unknown>) => ({
          flow_run_id: flowRun.id,
          task_key: "my-task-key",
          name: "my-cool-task-run-name",
          dynamic_key: "0",
          empirical_policy: { retries: 3, ...policy }
        })
        const delays = Array.from({ length: 100 }, (_, i) => i)
        expect(yield* problems("POST", "/task_runs/", taskRun({ retry_delay: delays }))).toEqual([
          {
            loc: ["body", "empirical_policy", "retry_delay"],
            msg: "Value error, Can not configure more than 50 retry delays per task.",
            type: "value_error",
            input: delays,
            ctx: { error: {} }
          }
        ])
        expect(yield* problems("POST", "/task_runs/", taskRun({ retry_jitter_factor: -100 }))).toEqual([
          {
            loc: ["body", "empirical_policy", "retry_jitter_factor"],
            msg: "Value error, `retry_jitter_factor` must be >= 0.",
            type: "value_error",
            input: -100,
            ctx: { error: {} }
          }
        ])
        // Fifty delays and a factor of 0 are fine; nothing was stored by the refused ones.
        const created = ok(yield* request("POST", "/task_runs/", { body: taskRun({ retry_delay: delays.slice(0, 50), retry_jitter_factor: 0 }) }), 201)
        expect(created.empirical_policy).toMatchObject({ retries: 3, retry_delay: delays.slice(0, 50), retry_jitter_factor: 0 })
        const count = ok(yield* request("POST", "/task_runs/count", { body: { flow_runs: { id: { any_: [flowRun.id] } } } }), 200)
        expect(count).toBe(1)
      }))

    it.effect("report text that does not read as the field's type as *_parsing, in bodies and query strings", () =>
      Effect.gen(function* () {
        expect(yield* problems("POST", "/flows/filter", { limit: "ten", offset: "1.5" })).toEqual([
          {
            loc: ["body", "offset"],
            msg: "Input should be a valid integer, unable to parse string as an integer",
            type: "int_parsing",
            input: "1.5"
          },
          {
            loc: ["body", "limit"],
            msg: "Input should be a valid integer, unable to parse string as an integer",
            type: "int_parsing",
            input: "ten"
          }
        ])
        expect(yield* problems("POST", "/block_documents/filter", { include_secrets: "maybe" })).toEqual([
          { loc: ["body", "include_secrets"], msg: "Input should be a valid boolean, unable to interpret input", type: "bool_parsing", input: "maybe" }
        ])
        expect(yield* problems("POST", "/v2/concurrency_limits/", { name: "decay", limit: 1, slot_decay_per_second: "fast" })).toEqual([
          {
            loc: ["body", "slot_decay_per_second"],
            msg: "Input should be a valid number, unable to parse string as a number",
            type: "float_parsing",
            input: "fast"
          }
        ])
        expect(yield* problems("GET", `/block_documents/${MISSING}?include_secrets=maybe`)).toEqual([
          { loc: ["query", "include_secrets"], msg: "Input should be a valid boolean, unable to interpret input", type: "bool_parsing", input: "maybe" }
        ])
        // A header too: a boolean header that does not read is a 422 at its place, not a failure of the server.
        ok(yield* request("POST", "/work_pools/", { body: { name: "header-pool", type: "process" } }), 201)
        const queue = ok(yield* request("POST", "/work_pools/header-pool/queues", { body: { name: "q" } }), 201)
        const runs = (header: string) => request("POST", `/work_queues/${queue.id}/get_runs`, { body: {}, headers: { "x-prefect-ui": header } })
        const badHeader = yield* runs("maybe")
        expect(badHeader.status).toBe(422)
        expect(badHeader.body.detail).toEqual([
          { loc: ["header", "x-prefect-ui"], msg: "Input should be a valid boolean, unable to interpret input", type: "bool_parsing", input: "maybe" }
        ])
        for (const header of ["1", "yes", "False"]) expect((yield* runs(header)).status, header).toBe(200)
        // A number that is not 0 or 1 does not read as a boolean either; other JSON types are *_type.
        expect(yield* problems("POST", "/block_documents/filter", { include_secrets: 2 })).toEqual([
          { loc: ["body", "include_secrets"], msg: "Input should be a valid boolean, unable to interpret input", type: "bool_parsing", input: 2 }
        ])
        expect(yield* problems("POST", "/flows/filter", { limit: [1] })).toEqual([
          { loc: ["body", "limit"], msg: "Input should be a valid integer", type: "int_type", input: [1] }
        ])
        expect(yield* problems("POST", "/flows/filter", { limit: 1.5 })).toEqual([
          { loc: ["body", "limit"], msg: "Input should be a valid integer, got a number with a fractional part", type: "int_from_float", input: 1.5 }
        ])
        // A bound is checked on the number read; the input is what was sent.
        expect(yield* problems("POST", "/events/filter", { limit: "51" })).toEqual([
          { loc: ["body", "limit"], msg: "Input should be less than or equal to 50", type: "less_than_equal", input: "51", ctx: { le: 50 } }
        ])
      }))

    it.effect("accept what pydantic's lax mode reads: numeric text for numbers, words and 0/1 for booleans", () =>
      Effect.gen(function* () {
        for (const name of ["lax-a", "lax-b", "lax-c"]) yield* makeFlow(name)
        const page = (limit: unknown) => Effect.map(request("POST", "/flows/filter", { body: { limit } }), (res) => ok(res, 200))
        expect(yield* page("1")).toHaveLength(1)
        expect(yield* page(" 2 ")).toHaveLength(2)
        expect(yield* page("2.00")).toHaveLength(2)
        expect(yield* page("+1")).toHaveLength(1)
        expect(yield* page(true)).toHaveLength(1)

        const flowId = yield* makeFlow("lax-flow")
        const deployment = yield* makeDeployment({ name: "lax", flow_id: flowId })
        const paused = (value: unknown) =>
          Effect.gen(function* () {
            expect((yield* request("PATCH", `/deployments/${deployment.id}`, { body: { paused: value } })).status).toBe(204)
            return ok(yield* request("GET", `/deployments/${deployment.id}`), 200).paused as boolean
          })
        for (const [value, expected] of [["yes", true], ["off", false], ["T", true], ["n", false], [1, true], [0, false], ["TRUE", true], ["0", false]] as const) {
          expect(yield* paused(value), JSON.stringify(value)).toBe(expected)
        }
        // A float as text, and an int's text with underscores, as Python writes them.
        ok(yield* request("POST", "/v2/concurrency_limits/", { body: { name: "lax-limit", limit: "1_0", slot_decay_per_second: "0.5" } }), 201)
        expect(ok(yield* request("GET", "/v2/concurrency_limits/lax-limit"), 200)).toMatchObject({ limit: 10, slot_decay_per_second: 0.5 })
        const lease = yield* request("POST", "/v2/concurrency_limits/increment-with-lease", {
          body: { names: ["lax-limit"], slots: "1", lease_duration: "120.5" }
        })
        expect(ok(lease, 200).limits).toEqual([expect.objectContaining({ name: "lax-limit", limit: 10 })])
        // Query parameters read the same words.
        const document = yield* request("GET", `/block_documents/${MISSING}?include_secrets=Yes`)
        expect(document.status).toBe(404)
      }))

    it.effect("give rule checks on a whole body (value_error) the body as sent and ctx", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("model-level")
        const both = { name: "both", flow_id: flowId, concurrency_limit: 2, global_concurrency_limit_id: MISSING }
        expect(yield* problems("POST", "/deployments/", both)).toEqual([
          {
            loc: ["body"],
            msg: "Value error, A deployment cannot have both a concurrency limit and a global concurrency limit.",
            type: "value_error",
            input: both,
            ctx: { error: {} }
          }
        ])
        const deployment = yield* makeDeployment({ name: "patched", flow_id: flowId })
        const patch = { concurrency_limit: 3, global_concurrency_limit_id: MISSING }
        expect(yield* problems("PATCH", `/deployments/${deployment.id}`, patch)).toEqual([
          expect.objectContaining({ loc: ["body"], type: "value_error", input: patch, ctx: { error: {} } })
        ])
        // Parameters enforced against the deployment's schema.
        const enforced = {
          name: "enforced",
          flow_id: flowId,
          parameter_openapi_schema: { type: "object", properties: { n: { type: "integer" } } },
          parameters: { n: "x" },
          enforce_parameter_schema: true
        }
        expect(yield* problems("POST", "/deployments/", enforced)).toEqual([
          {
            loc: ["body"],
            msg: "Value error, Validation failed for field 'n'. Failure reason: 'x' is not of type 'integer'",
            type: "value_error",
            input: enforced,
            ctx: { error: {} }
          }
        ])

        // An automation that would run a deployment for every run it starts.
        const looping = {
          name: "loop",
          trigger: { posture: "Reactive", expect: ["prefect.flow-run.Scheduled"] },
          actions: [{ type: "run-deployment", source: "inferred" }]
        }
        const loop = yield* problems("POST", "/automations/", looping)
        expect(loop).toEqual([expect.objectContaining({ loc: ["body"], type: "value_error", input: looping, ctx: { error: {} } })])
        expect(loop[0].msg).toMatch(/^Value error, Running an inferred deployment .* infinite loop/)
        // Switched on later, it is checked as the automation it would become: the reference reports
        // that whole automation, at its own (empty) location.
        const created: Record<string, unknown> = ok(yield* request("POST", "/automations/", { body: { ...looping, enabled: false } }), 201)
        const enabling = yield* problems("PATCH", `/automations/${created.id}`, { enabled: true })
        expect(enabling).toEqual([
          expect.objectContaining({ loc: [], type: "value_error", input: { ...created, enabled: true }, ctx: { error: {} } })
        ])
        expect(enabling[0].msg).toBe(loop[0].msg)
      }))
  })
})
