import { describe, expect, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { Clock, Effect, TestClock } from "effect"
import { EventPersister } from "../../src/events/persister.ts"
import { relatedResources } from "../../src/events/run-events.ts"
import { makeFlow, ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"
import { connect, opened } from "../support/websocket.ts"

let counter = 0
/** A fresh event id (UUIDv4 shape). */
const eventId = () => `00000000-0000-4000-8000-${String(++counter).padStart(12, "0")}`

/** An event `secondsAgo` before the test clock's now. */
const makeEvent = (name: string, secondsAgo: number, extra: Record<string, unknown> = {}) =>
  Effect.map(Clock.currentTimeMillis, (millis) => ({
    id: eventId(),
    occurred: new Date(millis - secondsAgo * 1000).toISOString(),
    event: name,
    resource: { "prefect.resource.id": `thing.${name}`, "prefect.resource.name": `Thing ${name}` },
    ...extra
  }))

const post = (events: Array<unknown>) => request("POST", "/events", { body: events })
const persist = Effect.flatMap(EventPersister, (persister) => persister.drain)
const names = (filter: Record<string, unknown>) =>
  Effect.map(request("POST", "/events/filter", { body: { filter } }), (res) => ok(res, 200).events.map((e: any) => e.event))

const overrides = {
  "server.events.maximum_event_name_length": 40,
  "server.events.maximum_labels_per_resource": 6,
  "server.events.maximum_related_resources": 3,
  "server.events.maximum_size_bytes": 4000
}

describe("run event resources", () => {
  const context = {
    id: "r1", name: "run", run_count: 1, tags: ["b", "a"], created_by: null,
    flow_run_id: null, flow_run_name: null, flow_run_tags: null,
    flow_id: "f1", flow_name: "flow", flow_tags: ["a", "c"],
    deployment_id: null, deployment_name: null, deployment_tags: null,
    work_queue_id: null, work_queue_name: null, work_pool_id: null, work_pool_name: null, work_pool_type: null,
    task_run_id: null, task_run_name: null, task_run_tags: null
  }
  it("name what the run belongs to, its tags once each in order, and a deployment or automation that created it", () => {
    expect(relatedResources(context)).toEqual([
      { "prefect.resource.id": "prefect.flow.f1", "prefect.resource.role": "flow", "prefect.resource.name": "flow" },
      { "prefect.resource.id": "prefect.tag.a", "prefect.resource.role": "tag" },
      { "prefect.resource.id": "prefect.tag.b", "prefect.resource.role": "tag" },
      { "prefect.resource.id": "prefect.tag.c", "prefect.resource.role": "tag" }
    ])
    const byAutomation = relatedResources({ ...context, created_by: { type: "AUTOMATION", id: "a1", display_value: "on failure" } })
    expect(byAutomation.at(-1)).toEqual({ "prefect.resource.id": "prefect.automation.a1", "prefect.resource.role": "creator", "prefect.resource.name": "on failure" })
    expect(relatedResources({ ...context, created_by: { type: "SCHEDULE", id: "s1" } }).some((r) => r["prefect.resource.role"] === "creator")).toBe(false)
  })
})

describe("events", () => {
  it.layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    it.effect("takes batches (204), refuses a batch with one bad event (422, nothing kept)", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.UTC(2026, 0, 10))
        const good = yield* makeEvent("batch.good", 10)
        const res = yield* post([good])
        expect(res.status).toBe(204)
        expect(res.text).toBe("")

        const bad = [
          { ...(yield* makeEvent("batch.no-id", 5)), resource: { "prefect.resource.name": "x" } },
          { ...(yield* makeEvent("batch.long-name", 5)), event: "x".repeat(41) },
          { ...(yield* makeEvent("batch.labels", 5)), resource: Object.fromEntries([["prefect.resource.id", "r"], ...Array.from({ length: 6 }, (_, i) => [`l${i}`, "v"])]) },
          { ...(yield* makeEvent("batch.related", 5)), related: Array.from({ length: 4 }, (_, i) => ({ "prefect.resource.id": `r${i}`, "prefect.resource.role": "x" })) },
          { ...(yield* makeEvent("batch.no-role", 5)), related: [{ "prefect.resource.id": "r" }] },
          { ...(yield* makeEvent("batch.big", 5)), payload: { blob: "x".repeat(5000) } }
        ]
        // Events that do not have the shape of an event are reported first…
        const misshapen = yield* post([yield* makeEvent("batch.fine", 5), bad[0], bad[4]])
        expect(misshapen.status).toBe(422)
        expect(misshapen.body.detail).toEqual([
          expect.objectContaining({ loc: ["body", 1, "resource"], msg: "Value error, Resources must include the prefect.resource.id label" }),
          expect.objectContaining({ loc: ["body", 2, "related", 0], msg: "Value error, Related Resources must include the prefect.resource.role label" })
        ])
        // …then every event beyond the server's limits.
        const refused = yield* post([yield* makeEvent("batch.fine", 5), ...bad.slice(1, 4), bad[5]])
        expect(refused.status).toBe(422)
        const detail = refused.body.detail as Array<any>
        expect(detail.map((d) => [d.loc, d.msg])).toEqual([
          [["body", 1, "event"], "Value error, Event name must be at most 40 characters"],
          [["body", 2, "resource"], "Value error, The maximum number of labels per resource is 6"],
          [["body", 3, "related"], "Value error, The maximum number of related resources is 3"],
          [["body", 4], expect.stringMatching(/^Value error, The event is \d+ bytes; events may be at most 4000 bytes$/)]
        ])
        yield* persist
        expect(yield* names({ event: { prefix: ["batch."] } })).toEqual(["batch.good"])
      })
    )

    it.effect("keeps the rest of a batch when the database refuses one event of it (a resource id too large to index)", () =>
      Effect.gen(function* () {
        // Random text does not compress: 3000 bytes are more than an index row holds.
        const huge = randomBytes(2250).toString("base64")
        const refused = yield* makeEvent("refusal.huge", 5, { resource: { "prefect.resource.id": huge } })
        expect((yield* post([yield* makeEvent("refusal.before", 6), refused, yield* makeEvent("refusal.after", 4)])).status).toBe(204)
        yield* persist
        expect(yield* names({ event: { prefix: ["refusal."] } })).toEqual(["refusal.after", "refusal.before"])
      })
    )

    it.effect("stores each event once, and reads them newest first (or oldest), a page at a time", () =>
      Effect.gen(function* () {
        const events = [yield* makeEvent("page.one", 30), yield* makeEvent("page.two", 20), yield* makeEvent("page.three", 10)]
        yield* post(events)
        yield* post([events[0]])
        yield* persist
        const filter = { event: { prefix: ["page."] } }
        expect(yield* names(filter)).toEqual(["page.three", "page.two", "page.one"])
        expect(yield* names({ ...filter, order: "ASC" })).toEqual(["page.one", "page.two", "page.three"])

        const first = ok(yield* request("POST", "/events/filter", { body: { filter, limit: 2 } }), 200)
        expect(first.total).toBe(3)
        expect(first.events.map((e: any) => e.event)).toEqual(["page.three", "page.two"])
        expect(first.events[0]).toMatchObject({ id: events[2]!.id, resource: events[2]!.resource, related: [], payload: {}, follows: null })
        expect(first.events[0].received).toEqual(expect.any(String))
        const next = new URL(first.next_page)
        expect(next.pathname).toBe("/v2/api/events/filter/next")
        const second = ok(yield* request("GET", `/events/filter/next${next.search}`), 200)
        expect(second).toMatchObject({ total: 3, next_page: null })
        expect(second.events.map((e: any) => e.event)).toEqual(["page.one"])
        expect((yield* request("GET", "/events/filter/next?page-token=not-a-token")).status).toBe(403)
        expect((yield* request("POST", "/events/filter", { body: { limit: 51 } })).status).toBe(422)
        expect((yield* request("POST", "/events/filter", { body: { filter: { unknown: 1 } } })).status).toBe(422)
      })
    )

    it.effect("takes back only page tokens it could have issued: a forged page size or offset is 403", () =>
      Effect.gen(function* () {
        const events = yield* Effect.forEach(["a", "b", "c", "d"], (name, i) => makeEvent(`forged.${name}`, 40 + i))
        yield* post(events)
        yield* persist
        const first = ok(yield* request("POST", "/events/filter", { body: { filter: { event: { prefix: ["forged."] } }, limit: 1 } }), 200)
        const issued = new URL(first.next_page).searchParams.get("page-token")!
        const token = JSON.parse(Buffer.from(issued, "base64url").toString("utf8"))
        expect(token).toMatchObject({ count: 4, page_size: 1, offset: 1 })
        const next = (changes: Record<string, unknown>) =>
          request("GET", `/events/filter/next?page-token=${Buffer.from(JSON.stringify({ ...token, ...changes })).toString("base64url")}`)
        // As issued, and rewritten within what could have been issued, a token reads its page.
        expect(ok(yield* next({}), 200).events).toHaveLength(1)
        const wider = ok(yield* next({ page_size: 50 }), 200)
        expect(wider.events.map((e: any) => e.event)).toEqual(["forged.b", "forged.c", "forged.d"])
        expect(wider.next_page).toBe(null)
        for (const forged of [{ page_size: 51 }, { page_size: 10_000_000 }, { page_size: -1 }, { offset: -1 }, { offset: 5 }, { count: -1 }, { page_size: 1.5 }]) {
          const answer = yield* next(forged)
          expect(answer.status, JSON.stringify(forged)).toBe(403)
          expect(answer.body).toEqual({ detail: "Forbidden" })
        }
        expect((yield* request("GET", "/health")).status).toBe(200)
      })
    )

    it.effect("filters by name, resource, labels (globs, negation), related, any resource, id, text and time", () =>
      Effect.gen(function* () {
        const flowRun = (id: string, state: string, tags: Array<string>, secondsAgo: number) =>
          makeEvent(`filters.flow-run.${state}`, secondsAgo, {
            resource: { "prefect.resource.id": `prefect.flow-run.${id}`, "prefect.resource.name": `run-${id}`, "prefect.state-type": state.toUpperCase() },
            related: [
              { "prefect.resource.id": "prefect.flow.f1", "prefect.resource.role": "flow", "prefect.resource.name": "etl" },
              ...tags.map((tag) => ({ "prefect.resource.id": `prefect.tag.${tag}`, "prefect.resource.role": "tag" }))
            ],
            payload: { note: `the ${state} one` }
          })
        const a = yield* flowRun("a", "Completed", ["prod"], 40)
        const b = yield* flowRun("b", "Failed", ["dev"], 30)
        const c = yield* flowRun("c", "Completed", [], 20)
        yield* post([a, b, c])
        yield* persist
        const scope = { prefix: ["filters."] }
        const names_ = (filter: Record<string, unknown>) => names({ event: scope, order: "ASC", ...filter })

        expect(yield* names_({ event: { ...scope, name: ["filters.flow-run.Failed"] } })).toEqual(["filters.flow-run.Failed"])
        expect(yield* names_({ event: { ...scope, exclude_name: ["filters.flow-run.Failed"] } })).toHaveLength(2)
        expect(yield* names_({ event: { ...scope, exclude_prefix: ["filters.flow-run.C"] } })).toEqual(["filters.flow-run.Failed"])
        const ids = (filter: Record<string, unknown>) =>
          Effect.map(request("POST", "/events/filter", { body: { filter: { event: scope, order: "ASC", ...filter } } }), (res) =>
            ok(res, 200).events.map((e: any) => e.resource["prefect.resource.name"])
          )
        expect(yield* ids({ resource: { id: ["prefect.flow-run.b"] } })).toEqual(["run-b"])
        expect(yield* ids({ resource: { id_prefix: ["prefect.flow-run."] } })).toEqual(["run-a", "run-b", "run-c"])
        expect(yield* ids({ resource: { labels: { "prefect.resource.id": "prefect.flow-run.*" } } })).toHaveLength(3)
        expect(yield* ids({ resource: { labels: { "prefect.state-type": "COMPLETED" } } })).toEqual(["run-a", "run-c"])
        expect(yield* ids({ resource: { labels: { "prefect.state-type": "!COMPLETED" } } })).toEqual(["run-b"])
        expect(yield* ids({ resource: { labels: { "prefect.resource.name": ["run-?", "other"] } } })).toHaveLength(3)
        expect(yield* ids({ related: { labels: { "prefect.resource.id": "prefect.tag.prod" } } })).toEqual(["run-a"])
        expect(yield* ids({ related: { role: ["tag"] } })).toEqual(["run-a", "run-b"])
        expect(yield* ids({ related: { resources_in_roles: [["prefect.tag.dev", "tag"]] } })).toEqual(["run-b"])
        expect(yield* ids({ related: [{ id: ["prefect.flow.f1"] }, { id: ["prefect.tag.dev"] }] })).toEqual(["run-b"])
        // A related filter does not look at the event's own resource.
        expect(yield* ids({ related: { id: ["prefect.flow-run.a"] } })).toEqual([])
        expect(yield* ids({ any_resource: { id: ["prefect.flow-run.a"] } })).toEqual(["run-a"])
        expect(yield* ids({ any_resource: { labels: { "prefect.resource.role": "tag" } } })).toEqual(["run-a", "run-b"])
        expect(yield* ids({ id: { id: [c.id] } })).toEqual(["run-c"])
        expect(yield* ids({ text: { query: "failed" } })).toEqual(["run-b"])
        expect(yield* ids({ text: { query: "completed -prod" } })).toEqual(["run-c"])
        const at = yield* Clock.currentTimeMillis
        expect(yield* ids({ occurred: { since: new Date(at - 35_000).toISOString(), until: new Date(at - 25_000).toISOString() } })).toEqual(["run-b"])
        expect(
          (yield* request("POST", "/events/filter", { body: { filter: { event: scope, resource: { distinct: true, id_prefix: ["prefect.flow-run."] } } } })).body.total
        ).toBe(3)
      })
    )

    it.effect("counts by event, resource and time, every bucket of the window included", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.UTC(2026, 1, 3, 12))
        const at = yield* Clock.currentTimeMillis
        const hour = 3600
        yield* post([
          yield* makeEvent("count.a", 26 * hour),
          yield* makeEvent("count.a", 2 * hour),
          yield* makeEvent("count.b", hour),
          { ...(yield* makeEvent("count.a", 60)), resource: { "prefect.resource.id": "thing.count.a", "prefect.resource.name": "Newest name" } }
        ])
        yield* persist
        const filter = { event: { prefix: ["count."] }, occurred: { since: new Date(at - 3 * 24 * hour * 1000).toISOString() } }
        const byEvent = ok(yield* request("POST", "/events/count-by/event", { body: { filter } }), 200)
        expect(byEvent.map((c: any) => [c.value, c.count])).toEqual([["count.a", 3], ["count.b", 1]])
        const byResource = ok(yield* request("POST", "/events/count-by/resource", { body: { filter } }), 200)
        expect(byResource[0]).toMatchObject({ value: "thing.count.a", label: "Newest name", count: 3 })

        const byDay = ok(yield* request("POST", "/events/count-by/day", { body: { filter } }), 200)
        expect(byDay.map((c: any) => [c.label, c.count])).toEqual([
          ["2026-01-31T00:00:00+00:00", 0],
          ["2026-02-01T00:00:00+00:00", 0],
          ["2026-02-02T00:00:00+00:00", 1],
          ["2026-02-03T00:00:00+00:00", 3]
        ])
        expect(byDay[3]).toMatchObject({ start_time: "2026-02-03T00:00:00.000Z", end_time: "2026-02-03T23:59:59.999Z" })
        const byHours = ok(
          yield* request("POST", "/events/count-by/time", {
            body: { filter: { ...filter, occurred: { since: new Date(at - 3 * hour * 1000).toISOString() } }, time_unit: "hour", time_interval: 1 }
          }),
          200
        )
        // 09:00, 10:00 and 11:00: the events of 10:00, 11:00 and 11:59.
        expect(byHours.map((c: any) => c.count)).toEqual([0, 1, 2])
        const tooMany = yield* request("POST", "/events/count-by/time", { body: { filter, time_unit: "second" } })
        expect(tooMany.status).toBe(422)
        expect(tooMany.body.detail).toMatch(/^The given interval would create \d+ buckets, which is too many/)
        expect((yield* request("POST", "/events/count-by/time", { body: { filter, time_interval: 0.001 } })).status).toBe(422)
        // Buckets so long that they would start or end outside years 1–9999.
        const huge = yield* request("POST", "/events/count-by/time", { body: { filter, time_unit: "week", time_interval: 2.2e30 } })
        expect(huge.status).toBe(422)
        expect(huge.body.detail).toMatch(/outside the supported range of dates/)
        expect((yield* request("POST", "/events/count-by/weeks", { body: { filter } })).status).toBe(422)
      })
    )

    it.effect("emits an event for every flow run state change, with the run's resources", () =>
      Effect.gen(function* () {
        const flowId = yield* makeFlow("evented", { tags: ["flow-tag"] })
        ok(yield* request("POST", "/work_pools/", { body: { name: "evented-pool", type: "process" } }), 201)
        const deployment = ok(
          yield* request("POST", "/deployments/", {
            body: { name: "evented-dep", flow_id: flowId, tags: ["dep-tag"], work_pool_name: "evented-pool" }
          }),
          201
        )
        const run = ok(
          yield* request("POST", `/deployments/${deployment.id}/create_flow_run`, { body: { tags: ["run-tag"], state: { type: "SCHEDULED" } } }),
          201
        )
        yield* TestClock.adjust("1 second")
        ok(yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "PENDING" } } }), 201)
        yield* TestClock.adjust("1 second")
        ok(yield* request("POST", `/flow_runs/${run.id}/set_state`, { body: { state: { type: "RUNNING", message: "go" } } }), 201)
        // The emitter works in the background: wait for its events.
        let found: Array<any> = []
        for (let i = 0; i < 50 && found.length < 3; i++) {
          yield* Effect.promise(() => new Promise((done) => setTimeout(done, 20)))
          yield* persist
          found = ok(
            yield* request("POST", "/events/filter", {
              body: { filter: { resource: { id: [`prefect.flow-run.${run.id}`] }, order: "ASC", occurred: { since: "2000-01-01T00:00:00Z" } } }
            }),
            200
          ).events
        }
        expect(found.map((e) => e.event)).toEqual(["prefect.flow-run.Scheduled", "prefect.flow-run.Pending", "prefect.flow-run.Running"])
        const running = found[2]
        expect(running.resource).toMatchObject({
          "prefect.resource.name": run.name,
          "prefect.state-type": "RUNNING",
          "prefect.state-name": "Running",
          "prefect.state-message": "go",
          "prefect.run-count": "1"
        })
        expect(running.payload).toEqual({
          intended: { from: "PENDING", to: "RUNNING" },
          initial_state: { type: "PENDING", name: "Pending" },
          validated_state: { type: "RUNNING", name: "Running", message: "go" }
        })
        expect(running.follows).toBe(found[1].id)
        const roles = running.related.map((r: any) => [r["prefect.resource.role"], r["prefect.resource.id"]])
        const pool = running.related.find((r: any) => r["prefect.resource.role"] === "work-pool")
        expect(pool).toMatchObject({ "prefect.resource.name": "evented-pool", "prefect.work-pool.type": "process" })
        expect(roles).toEqual(
          expect.arrayContaining([
            ["flow", `prefect.flow.${flowId}`],
            ["deployment", `prefect.deployment.${deployment.id}`],
            ["work-queue", expect.stringMatching(/^prefect\.work-queue\./)],
            ["work-pool", expect.stringMatching(/^prefect\.work-pool\./)],
            ["tag", "prefect.tag.dep-tag"],
            ["tag", "prefect.tag.flow-tag"],
            ["tag", "prefect.tag.run-tag"]
          ])
        )
      })
    )

    it.effect("takes events over /events/in and streams them over /events/out after a backfill", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.now())
        const old = yield* makeEvent("socket.old", 60)
        const ancient = yield* makeEvent("socket.ancient", 3600)
        yield* post([old, ancient])
        yield* persist

        const out = opened(yield* connect("/events/out"))
        out.send({ type: "auth", token: null })
        expect(yield* Effect.promise(() => out.next())).toEqual({ type: "auth_success" })
        out.send({ type: "filter", filter: { event: { prefix: ["socket."] } } })
        // The backfill reaches back maximum_websocket_backfill (15 minutes), oldest first.
        expect((yield* Effect.promise(() => out.next())).event.event).toBe("socket.old")

        const inbound = opened(yield* connect("/events/in"))
        inbound.send({ type: "auth", token: null })
        expect(yield* Effect.promise(() => inbound.next())).toEqual({ type: "auth_success" })
        inbound.send(yield* makeEvent("other.ignored", 0))
        inbound.send(yield* makeEvent("socket.live", 0))
        const live = yield* Effect.promise(() => out.next())
        expect(live).toMatchObject({ type: "event", event: { event: "socket.live" } })
        inbound.send({ event: "no resource" })
        expect((yield* Effect.promise(() => inbound.closed)).code).toBe(1007)
        out.close()
        yield* persist
        expect(yield* names({ event: { prefix: ["socket.live"] } })).toEqual(["socket.live"])
      })
    )

    it.effect("writes events as a background service every flush, and deletes them after the retention period", () =>
      Effect.gen(function* () {
        const persister = yield* EventPersister
        yield* TestClock.setTime(Date.UTC(2026, 5, 1))
        yield* post([yield* makeEvent("service.one", 1)])
        const flushed = yield* Effect.fork(persister.tick)
        yield* TestClock.adjust("1 second")
        yield* Effect.promise(() => new Promise((done) => setTimeout(done, 50)))
        expect(yield* names({ event: { prefix: ["service."] } })).toEqual(["service.one"])
        yield* flushed.await

        yield* TestClock.adjust("8 days")
        expect(yield* persister.trim).toBeGreaterThan(0)
        const everything = ok(yield* request("POST", "/events/filter", { body: { filter: { occurred: { since: "2000-01-01T00:00:00Z" } } } }), 200)
        expect(everything.total).toBe(0)
      })
    )
  })
})
