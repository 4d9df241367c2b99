/**
 * Changing a deployment after it was made: PATCH of its fields and of its schedules, the routes of
 * one schedule, and schedules written concurrently.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Deployment } from "../../src/deployments/schemas.ts"
import { BlockDocument } from "../../src/blocks/documents-schemas.ts"
import { BlockSchema, BlockType } from "../../src/blocks/schemas.ts"
import { makeDeployment, makeFlow, ok, okAs, once } from "../support/api.ts"
import { clientOf, type Json, request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const interval = (seconds: number) => ({ schedule: { interval: seconds }, active: false })

/** The deployment as the wire has it. */
const readDeployment = (id: string) => Effect.map(request("GET", `/deployments/${id}`), (res) => ok(res, 200))
/** The deployment as the typed client reads it. */
const readTyped = (id: string) => Effect.flatMap(clientOf("deployments"), (deployments) => deployments.read({ path: { id } }))
const patch = (id: string, body: unknown) => request("PATCH", `/deployments/${id}`, { body })

/** A deployment on its own flow, for a test that changes it. */
const deploymentOf = (name: string, body: Record<string, unknown> = {}) =>
  Effect.flatMap(makeFlow(name), (flowId) => makeDeployment({ name, flow_id: flowId, ...body }))

/** A deployment with tags, a version and its own concurrency limit of 2. */
const patchable = (name: string) => deploymentOf(name, { tags: ["a"], version: "1", concurrency_limit: 2 })

/** A deployment's schedules by slug. */
const bySlug = (deployment: Json) => Object.fromEntries(deployment.schedules.map((s) => [s.slug, s]))

/** A deployment with the schedules hourly and morning (Berlin, with parameters). */
const slugged = (name: string) =>
  Effect.flatMap(
    deploymentOf(name, {
      schedules: [
        { schedule: { interval: 3600 }, slug: "hourly" },
        { schedule: { cron: "0 9 * * *", timezone: "Europe/Berlin" }, slug: "morning", parameters: { a: 1 } }
      ]
    }),
    (dep) => Effect.map(readDeployment(dep.id), (read) => ({ id: dep.id, before: bySlug(read) }))
  )

/** A stored block document to link a deployment to. */
const storageBlock = Effect.gen(function* () {
  const type = okAs(BlockType, yield* request("POST", "/block_types/", { body: { name: "Storage", slug: "dep-storage" } }), 201)
  const schema = okAs(BlockSchema, yield* request("POST", "/block_schemas/", { body: { block_type_id: type.id, fields: {} } }), 201)
  const document = yield* request("POST", "/block_documents/", { body: { name: "dep-storage", block_type_id: type.id, block_schema_id: schema.id, data: {} } })
  return okAs(BlockDocument, document, 201).id
})

/** A deployment with two schedules made through the schedules route: minutely (5 runs at most) and an inactive daily rrule. */
const withRouteSchedules = (name: string) =>
  Effect.gen(function* () {
    const dep = yield* deploymentOf(name)
    const created = yield* request("POST", `/deployments/${dep.id}/schedules`, {
      body: [
        { schedule: { interval: 60 }, slug: "minutely", max_scheduled_runs: 5 },
        { schedule: { rrule: "FREQ=DAILY;BYHOUR=6" }, active: false }
      ]
    })
    return { dep, created }
  })

describe("updating deployments", () => {
  it.layer(testServer(), { timeout: 120_000 })((it) => {
    describe("PATCH", () => {
      it.effect("changes only what it is sent (204, no body) and resolves a named work queue in the default pool", () =>
        Effect.gen(function* () {
          const dep = yield* patchable("patch-fields")
          const res = yield* patch(dep.id, { description: "patched", work_queue_name: "patch-q", concurrency_limit: 5, job_variables: { image: "x" } })
          expect(res.status).toBe(204)
          expect(res.text).toBe("")
          const after = yield* readDeployment(dep.id)
          expect(after).toMatchObject({
            description: "patched",
            tags: ["a"],
            version: "1",
            work_queue_name: "patch-q",
            work_pool_name: "default-agent-pool",
            job_variables: { image: "x" }
          })
          expect(Date.parse(after.updated as string)).toBeGreaterThanOrEqual(Date.parse(dep.updated!))
        }))

      it.effect("keeps the deployment's own concurrency limit, changing its limit; null removes it", () =>
        Effect.gen(function* () {
          const dep = yield* patchable("patch-limit")
          yield* patch(dep.id, { concurrency_limit: 5 })
          expect((yield* readDeployment(dep.id)).global_concurrency_limit).toMatchObject({ id: dep.global_concurrency_limit!.id, limit: 5 })
          yield* patch(dep.id, { concurrency_limit: null })
          expect((yield* readTyped(dep.id)).global_concurrency_limit).toBeNull()
        }))

      it.effect("work_pool_name null takes the deployment out of its pool and queue", () =>
        Effect.gen(function* () {
          const dep = yield* patchable("patch-no-pool")
          yield* patch(dep.id, { work_queue_name: "patch-q" })
          yield* patch(dep.id, { work_pool_name: null })
          expect(yield* readTyped(dep.id)).toMatchObject({ work_queue_id: null, work_pool_name: null })
        }))

      it.effect("sets concurrency options; a collision strategy the reference lacks is 422", () =>
        Effect.gen(function* () {
          const dep = yield* patchable("patch-options")
          const options = yield* patch(dep.id, { concurrency_options: { collision_strategy: "CANCEL_NEW", grace_period_seconds: 120 } })
          expect(options.status).toBe(204)
          expect((yield* readTyped(dep.id)).concurrency_options).toEqual({ collision_strategy: "CANCEL_NEW", grace_period_seconds: 120 })
          const badStrategy = yield* patch(dep.id, { concurrency_options: { collision_strategy: "WAIT" } })
          expect(badStrategy.status).toBe(422)
        }))

      it.effect("refuses an unknown pool (404), an unknown deployment (404), a field it does not take (422) and an unknown global limit (404)", () =>
        Effect.gen(function* () {
          const dep = yield* patchable("patch-refused")
          const noPool = yield* patch(dep.id, { work_pool_name: "nowhere" })
          expect(noPool.status).toBe(404)
          expect(noPool.body).toEqual({ detail: 'Work pool "nowhere" not found.' })
          const missing = yield* patch(MISSING, {})
          expect(missing.body).toEqual({ detail: "Deployment not found." })
          const extra = yield* patch(dep.id, { name: "renamed" })
          expect(extra.status).toBe(422)
          const gcl = yield* patch(dep.id, { global_concurrency_limit_id: MISSING })
          expect(gcl.status).toBe(404)
          expect(gcl.body).toEqual({ detail: "Concurrency limit not found" })
        }))

      it.effect("sets every field of the spec's table, one at a time, leaving the others alone", () =>
        Effect.gen(function* () {
          const owner = yield* deploymentOf("patch-owner", { concurrency_limit: 4 })
          const dep = yield* deploymentOf("patch-every-field", { enforce_parameter_schema: false })
          // The document ids must name a stored block document.
          const blockId = yield* storageBlock
          const cases: Array<readonly [string, unknown, (d: Json) => unknown, unknown]> = [
            ["version", "2.0", (d) => d.version, "2.0"],
            ["description", "about", (d) => d.description, "about"],
            ["paused", true, (d) => d.paused, true],
            ["paused", false, (d) => d.paused, false],
            ["schedules", [{ schedule: { interval: 600 }, slug: "ten" }], (d) => d.schedules.map((s) => [s.slug, s.schedule.interval]), [["ten", 600]]],
            ["concurrency_limit", 3, (d) => d.global_concurrency_limit?.limit, 3],
            ["concurrency_options", { collision_strategy: "ENQUEUE" }, (d) => d.concurrency_options, { collision_strategy: "ENQUEUE", grace_period_seconds: null }],
            ["global_concurrency_limit_id", owner.global_concurrency_limit!.id, (d) => d.global_concurrency_limit?.name, `deployment:${owner.id}`],
            ["parameters", { p: [1, 2] }, (d) => d.parameters, { p: [1, 2] }],
            ["parameter_openapi_schema", { type: "object", properties: { p: { type: "array" } } }, (d) => d.parameter_openapi_schema.properties, { p: { type: "array" } }],
            ["tags", ["x", "y"], (d) => d.tags, ["x", "y"]],
            ["work_queue_name", "fields-q", (d) => [d.work_queue_name, d.work_pool_name], ["fields-q", "default-agent-pool"]],
            ["work_pool_name", "default-agent-pool", (d) => [d.work_queue_name, d.work_pool_name], ["default", "default-agent-pool"]],
            ["path", "/srv/flows", (d) => d.path, "/srv/flows"],
            ["job_variables", { env: { A: "1" } }, (d) => d.job_variables, { env: { A: "1" } }],
            ["pull_steps", [{ "prefect.deployments.steps.git_clone": { repository: "r" } }], (d) => d.pull_steps, [{ "prefect.deployments.steps.git_clone": { repository: "r" } }]],
            ["entrypoint", "flows.py:main", (d) => d.entrypoint, "flows.py:main"],
            ["storage_document_id", blockId, (d) => d.storage_document_id, blockId],
            ["infrastructure_document_id", blockId, (d) => d.infrastructure_document_id, blockId],
            ["enforce_parameter_schema", true, (d) => d.enforce_parameter_schema, true],
            ["version_info", { type: "git", version: "abc123" }, (d) => d.version, "2.0"]
          ]
          for (const [field, value, read, expected] of cases) {
            const res = yield* patch(dep.id, { [field]: value })
            expect(res.status, `${field}: ${JSON.stringify(res.body)}`).toBe(204)
            expect(read(yield* readDeployment(dep.id)), field).toEqual(expected)
          }
          // Fields not sent were left alone all along.
          expect(yield* readDeployment(dep.id)).toMatchObject({ name: "patch-every-field", description: "about", tags: ["x", "y"], path: "/srv/flows" })
        }))

      const invalid = [
        ["version", 1],
        ["paused", "maybe"],
        ["tags", "x"],
        ["concurrency_limit", -1],
        ["concurrency_options", { collision_strategy: "ENQUEUE", grace_period_seconds: 10 }],
        ["global_concurrency_limit_id", "not-a-uuid"],
        ["schedules", [{ schedule: { interval: -5 } }]],
        ["schedules", [{ schedule: { cron: "* * *" } }]],
        ["schedules", [{ schedule: { rrule: "FREQ=NEVER" } }]],
        ["schedules", [{ schedule: { interval: 60, timezone: "Mars/Base" } }]],
        ["version_info", { type: "git" }]
      ] as const
      const refusing = once(deploymentOf("patch-refusing", { enforce_parameter_schema: false }))
      for (const [field, value] of invalid) {
        it.effect(`refuses ${field}: ${JSON.stringify(value)} with 422 at the body`, () =>
          Effect.gen(function* () {
            const res = yield* patch((yield* refusing).id, { [field]: value })
            expect(res.status).toBe(422)
            expect(res.body.detail[0].loc[0]).toBe("body")
          }))
      }
    })

    describe("PATCH of schedules", () => {
      const changes = {
        schedules: [
          { slug: "hourly", active: false },
          { slug: "evening", replaces: "morning", schedule: { cron: "0 18 * * *" } },
          { slug: "weekly", schedule: { interval: 604800 } }
        ]
      }

      it.effect("updates one by slug, keeping its id and schedule", () =>
        Effect.gen(function* () {
          const { id, before } = yield* slugged("patch-by-slug")
          expect((yield* patch(id, changes)).status).toBe(204)
          const after = bySlug(yield* readDeployment(id))
          expect(after.hourly).toMatchObject({ id: before.hourly.id, active: false, schedule: before.hourly.schedule })
        }))

      it.effect("renames one with replaces, keeping its id and resetting what is not sent", () =>
        Effect.gen(function* () {
          const { id, before } = yield* slugged("patch-renamed")
          yield* patch(id, changes)
          const after = bySlug(yield* readDeployment(id))
          expect(after.evening).toMatchObject({ id: before.morning.id, schedule: { cron: "0 18 * * *" }, parameters: {} })
        }))

      it.effect("adds one with a new slug, active, in UTC; keeps those it does not mention", () =>
        Effect.gen(function* () {
          const { id } = yield* slugged("patch-added")
          yield* patch(id, changes)
          const after = bySlug(yield* readDeployment(id))
          expect(Object.keys(after).sort()).toEqual(["evening", "hourly", "weekly"])
          expect(after.weekly).toMatchObject({ active: true, schedule: { interval: 604800, timezone: "UTC" } })
        }))

      it.effect("refuses what the reference's route refuses, with a plain detail, and changes nothing", () =>
        Effect.gen(function* () {
          const { id } = yield* slugged("patch-refused-schedules")
          yield* patch(id, changes)
          // Every existing schedule has a slug: a new one without a slug is refused.
          const noSlug = yield* patch(id, { schedules: [{ schedule: { interval: 60 } }] })
          // The reference's route refuses these itself (HTTPException): a plain `detail` message.
          expect(noSlug.status).toBe(422)
          expect(noSlug.body).toEqual({ detail: "Please provide a slug for each schedule in your request to ensure schedules are updated correctly." })
          const twice = yield* patch(id, { schedules: [{ slug: "x", replaces: "hourly" }, { slug: "y", replaces: "hourly" }] })
          expect(twice.body).toEqual({ detail: "Multiple schedules have 'replaces' targeting the same slug: hourly" })
          const clash = yield* patch(id, { schedules: [{ slug: "weekly", replaces: "hourly" }] })
          expect(clash.body).toEqual({ detail: "Cannot rename schedule from 'hourly' to 'weekly': a schedule with slug 'weekly' already exists." })
          const noConfig = yield* patch(id, { schedules: [{ slug: "new" }] })
          expect(noConfig.status).toBe(422)
          expect(noConfig.body).toEqual({ detail: "Unable to create new deployment schedules without a schedule configuration." })
          expect(Object.keys(bySlug(yield* readDeployment(id))).sort()).toEqual(["evening", "hourly", "weekly"])
        }))

      it.effect("without slugs, the list replaces the deployment's schedules; [] removes them all", () =>
        Effect.gen(function* () {
          const plain = yield* deploymentOf("patch-plain", { schedules: [{ schedule: { interval: 60 } }] })
          yield* patch(plain.id, { schedules: [{ schedule: { interval: 120 } }, { schedule: { interval: 240 }, active: false }] })
          const replaced = yield* readDeployment(plain.id)
          expect(replaced.schedules.map((s) => [s.schedule.interval, s.active]).sort()).toEqual([[120, true], [240, false]])
          yield* patch(plain.id, { schedules: [] })
          expect((yield* readTyped(plain.id)).schedules).toEqual([])
        }))
    })

    describe("the routes of a deployment's schedules", () => {
      it.effect("create answers 201 with the schedules, defaults filled in", () =>
        Effect.gen(function* () {
          const { dep, created } = yield* withRouteSchedules("routes-create")
          expect(created.status).toBe(201)
          expect(created.body.map((s) => s.slug)).toEqual(["minutely", null])
          expect(created.body[0]).toMatchObject({ deployment_id: dep.id, max_scheduled_runs: 5, active: true, parameters: {} })
          expect(created.body[1].schedule).toEqual({ rrule: "FREQ=DAILY;BYHOUR=6", timezone: "UTC" })
        }))

      it.effect("create refuses a slug the deployment has (409)", () =>
        Effect.gen(function* () {
          const { dep } = yield* withRouteSchedules("routes-duplicate")
          const dup = yield* request("POST", `/deployments/${dep.id}/schedules`, { body: [{ schedule: { interval: 30 }, slug: "minutely" }] })
          expect(dup.status).toBe(409)
          expect(dup.body).toEqual({ detail: "Schedule slugs must be unique within a deployment." })
          expect((yield* request("GET", `/deployments/${dep.id}/schedules`)).body).toHaveLength(2)
        }))

      it.effect("PATCH changes one schedule and leaves the rest of it", () =>
        Effect.gen(function* () {
          const { dep, created } = yield* withRouteSchedules("routes-patch")
          const id = created.body[0].id
          const patched = yield* request("PATCH", `/deployments/${dep.id}/schedules/${id}`, { body: { active: false, parameters: { p: 1 } } })
          expect(patched.status).toBe(204)
          const stored = (yield* request("GET", `/deployments/${dep.id}/schedules`)).body.find((s) => s.id === id)
          expect(stored).toMatchObject({ active: false, parameters: { p: 1 }, slug: "minutely", max_scheduled_runs: 5 })
        }))

      it.effect("an unknown schedule or deployment is 404", () =>
        Effect.gen(function* () {
          const { dep } = yield* withRouteSchedules("routes-missing")
          expect((yield* request("PATCH", `/deployments/${dep.id}/schedules/${MISSING}`, { body: {} })).body).toEqual({ detail: "Schedule not found." })
          expect((yield* request("GET", `/deployments/${MISSING}/schedules`)).body).toEqual({ detail: "Deployment not found." })
        }))

      it.effect("DELETE removes one schedule (204); once it is gone, 404", () =>
        Effect.gen(function* () {
          const { dep, created } = yield* withRouteSchedules("routes-delete")
          const id = created.body[0].id
          expect((yield* request("DELETE", `/deployments/${dep.id}/schedules/${id}`)).status).toBe(204)
          expect((yield* request("DELETE", `/deployments/${dep.id}/schedules/${id}`)).status).toBe(404)
          expect((yield* request("GET", `/deployments/${dep.id}/schedules`)).body).toHaveLength(1)
        }))
    })

    describe("schedules written concurrently", () => {
      it.effect("creating and replacing a deployment's schedules at once never answers 500, each create answers what it stored", () =>
        Effect.gen(function* () {
          const flowId = yield* makeFlow("concurrent-schedules")
          const deployment = okAs(Deployment, yield* request("POST", "/deployments/", { body: { name: "concurrent", flow_id: flowId, schedules: [interval(60)] } }))
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
              expect(answer.body.map((s) => s.schedule.interval)).toEqual([1000 + round, 2000 + round])
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
            const deployment = okAs(Deployment, yield* request("POST", "/deployments/", { body: { name: `doomed-${round}`, flow_id: flowId } }))
            const [created, deleted] = yield* Effect.all([
              request("POST", `/deployments/${deployment.id}/schedules`, { body: [interval(60), interval(120)] }),
              request("DELETE", `/deployments/${deployment.id}`)
            ], { concurrency: "unbounded" })
            expect(deleted.status).toBe(204)
            expect([201, 404], created.text).toContain(created.status)
            if (created.status === 201) expect(created.body.map((s) => s.schedule.interval)).toEqual([60, 120])
            statuses.push(created.status)
          }
          expect(statuses.length).toBe(6)
        })
      )
    })
  })
})
