import { describe, expect, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { Clock, Effect, TestClock } from "effect"
import { EventPersister } from "../../src/events/persister.ts"
import { relatedResources } from "../../src/events/run-events.ts"
import { ok, once } from "../support/api.ts"
import { type Json, request, testServer } from "../support/server.ts"
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
  Effect.map(request("POST", "/events/filter", { body: { filter } }), (res) => ok(res, 200).events.map((e) => e.event))

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

/** Events named <prefix>.* that break a rule each: no resource id, a long name, too many labels, too many related, a related without a role, too big. */
const badEvents = (prefix: string) =>
  Effect.gen(function* () {
    return {
      noId: { ...(yield* makeEvent(`${prefix}.no-id`, 5)), resource: { "prefect.resource.name": "x" } },
      longName: { ...(yield* makeEvent(`${prefix}.long-name`, 5)), event: "x".repeat(41) },
      labels: { ...(yield* makeEvent(`${prefix}.labels`, 5)), resource: Object.fromEntries([["prefect.resource.id", "r"], ...Array.from({ length: 6 }, (_, i) => [`l${i}`, "v"])]) },
      related: { ...(yield* makeEvent(`${prefix}.related`, 5)), related: Array.from({ length: 4 }, (_, i) => ({ "prefect.resource.id": `r${i}`, "prefect.resource.role": "x" })) },
      noRole: { ...(yield* makeEvent(`${prefix}.no-role`, 5)), related: [{ "prefect.resource.id": "r" }] },
      big: { ...(yield* makeEvent(`${prefix}.big`, 5)), payload: { blob: "x".repeat(5000) } }
    }
  })
/** A batch with events that do not have the shape of an event. */
const misshapen = (prefix: string) => Effect.flatMap(badEvents(prefix), (bad) => Effect.map(makeEvent(`${prefix}.fine`, 5), (fine) => [fine, bad.noId, bad.noRole]))
/** A batch with events beyond the server's limits. */
const beyondLimits = (prefix: string) =>
  Effect.flatMap(badEvents(prefix), (bad) => Effect.map(makeEvent(`${prefix}.fine`, 5), (fine) => [fine, bad.longName, bad.labels, bad.related, bad.big]))

/** page.one, page.two and page.three, 30, 20 and 10 seconds ago; the first sent twice. */
const pages = once(
  Effect.gen(function* () {
    const events = [yield* makeEvent("page.one", 30), yield* makeEvent("page.two", 20), yield* makeEvent("page.three", 10)]
    yield* post(events)
    yield* post([events[0]])
    yield* persist
    return { events, filter: { event: { prefix: ["page."] } } }
  })
)

/** forged.a … forged.d, and the page token of the first page of one event. */
const forgeable = once(
  Effect.gen(function* () {
    const events = yield* Effect.forEach(["a", "b", "c", "d"], (name, i) => makeEvent(`forged.${name}`, 40 + i))
    yield* post(events)
    yield* persist
    const first = ok(yield* request("POST", "/events/filter", { body: { filter: { event: { prefix: ["forged."] } }, limit: 1 } }), 200)
    const issued = new URL(first.next_page as string).searchParams.get("page-token")!
    return JSON.parse(Buffer.from(issued, "base64url").toString("utf8")) as Record<string, unknown>
  })
)
const nextWith = (token: Record<string, unknown>, changes: Record<string, unknown>) =>
  request("GET", `/events/filter/next?page-token=${Buffer.from(JSON.stringify({ ...token, ...changes })).toString("base64url")}`)

/** Events about flow runs a (Completed, prod), b (Failed, dev) and c (Completed), 40, 30 and 20 seconds before `at`. */
const runEvents = once(
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
    const at = yield* Clock.currentTimeMillis
    const [a, b, c] = [yield* flowRun("a", "Completed", ["prod"], 40), yield* flowRun("b", "Failed", ["dev"], 30), yield* flowRun("c", "Completed", [], 20)]
    yield* post([a, b, c])
    yield* persist
    return { at, c }
  })
)
const runScope = { prefix: ["filters."] }
/** The names of the resources of the run events a filter matches, oldest first. */
const resourceNames = (filter: Record<string, unknown>) =>
  Effect.gen(function* () {
    yield* runEvents
    const res = yield* request("POST", "/events/filter", { body: { filter: { event: runScope, order: "ASC", ...filter } } })
    return ok(res, 200).events.map((e) => e.resource["prefect.resource.name"])
  })

const NOON = Date.UTC(2026, 1, 3, 12)
const HOUR = 3600
/** count.a 26 h, 2 h and a minute before noon of 3 February 2026 (the last renamed), count.b an hour before; the clock at that noon. */
const countedEvents = once(
  Effect.gen(function* () {
    yield* post([
      yield* makeEvent("count.a", 26 * HOUR),
      yield* makeEvent("count.a", 2 * HOUR),
      yield* makeEvent("count.b", HOUR),
      { ...(yield* makeEvent("count.a", 60)), resource: { "prefect.resource.id": "thing.count.a", "prefect.resource.name": "Newest name" } }
    ])
    yield* persist
  })
)
/** The count events made (once), the clock at that noon (each time): the filter for three days back. */
const counted = Effect.gen(function* () {
  yield* TestClock.setTime(NOON)
  yield* countedEvents
  return { event: { prefix: ["count."] }, occurred: { since: new Date(NOON - 3 * 24 * HOUR * 1000).toISOString() } }
})
const countBy = (path: string, body: Record<string, unknown>) => Effect.map(request("POST", `/events/count-by/${path}`, { body }), (res) => ok(res, 200))

describe("events", () => {
  it.layer(testServer({ overrides }), { timeout: 60_000 })((it) => {
    describe("POST /events", () => {
      it.effect("takes a batch (204, no body)", () =>
        Effect.gen(function* () {
          yield* TestClock.setTime(Date.UTC(2026, 0, 10))
          const res = yield* post([yield* makeEvent("batch.good", 10)])
          expect(res.status).toBe(204)
          expect(res.text).toBe("")
        }))

      it.effect("reports the events that do not have the shape of an event first (422)", () =>
        Effect.gen(function* () {
          const refused = yield* post(yield* misshapen("misshapen"))
          expect(refused.status).toBe(422)
          expect(refused.body.detail).toEqual([
            expect.objectContaining({ loc: ["body", 1, "resource"], msg: "Value error, Resources must include the prefect.resource.id label" }),
            expect.objectContaining({ loc: ["body", 2, "related", 0], msg: "Value error, Related Resources must include the prefect.resource.role label" })
          ])
        }))

      it.effect("then every event beyond the server's limits (422)", () =>
        Effect.gen(function* () {
          const refused = yield* post(yield* beyondLimits("limits"))
          expect(refused.status).toBe(422)
          expect(refused.body.detail.map((d) => [d.loc, d.msg])).toEqual([
            [["body", 1, "event"], "Value error, Event name must be at most 40 characters"],
            [["body", 2, "resource"], "Value error, The maximum number of labels per resource is 6"],
            [["body", 3, "related"], "Value error, The maximum number of related resources is 3"],
            [["body", 4], expect.stringMatching(/^Value error, The event is \d+ bytes; events may be at most 4000 bytes$/)]
          ])
        }))

      it.effect("keeps nothing of a refused batch", () =>
        Effect.gen(function* () {
          yield* post([yield* makeEvent("kept.good", 10)])
          yield* post(yield* misshapen("kept"))
          yield* post(yield* beyondLimits("kept"))
          yield* persist
          expect(yield* names({ event: { prefix: ["kept."] } })).toEqual(["kept.good"])
        }))

      it.effect("keeps the rest of a batch when the database refuses one event of it (a resource id too large to index)", () =>
        Effect.gen(function* () {
          // Random text does not compress: 3000 bytes are more than an index row holds.
          const huge = randomBytes(2250).toString("base64")
          const refused = yield* makeEvent("refusal.huge", 5, { resource: { "prefect.resource.id": huge } })
          expect((yield* post([yield* makeEvent("refusal.before", 6), refused, yield* makeEvent("refusal.after", 4)])).status).toBe(204)
          yield* persist
          expect(yield* names({ event: { prefix: ["refusal."] } })).toEqual(["refusal.after", "refusal.before"])
        }))
    })

    describe("reading events", () => {
      it.effect("stores each event once, and reads them newest first, or oldest first", () =>
        Effect.gen(function* () {
          const { filter } = yield* pages
          expect(yield* names(filter)).toEqual(["page.three", "page.two", "page.one"])
          expect(yield* names({ ...filter, order: "ASC" })).toEqual(["page.one", "page.two", "page.three"])
        }))

      it.effect("reads a page at a time: the first page, with the total and the next page's URL", () =>
        Effect.gen(function* () {
          const { events, filter } = yield* pages
          const first = ok(yield* request("POST", "/events/filter", { body: { filter, limit: 2 } }), 200)
          expect(first.total).toBe(3)
          expect(first.events.map((e) => e.event)).toEqual(["page.three", "page.two"])
          expect(first.events[0]).toMatchObject({ id: events[2]!.id, resource: events[2]!.resource, related: [], payload: {}, follows: null })
          expect(first.events[0].received).toEqual(expect.any(String))
          expect(new URL(first.next_page as string).pathname).toBe("/v2/api/events/filter/next")
        }))

      it.effect("reads the next page from its URL, the last one without a next", () =>
        Effect.gen(function* () {
          const { filter } = yield* pages
          const first = ok(yield* request("POST", "/events/filter", { body: { filter, limit: 2 } }), 200)
          const second = ok(yield* request("GET", `/events/filter/next${new URL(first.next_page as string).search}`), 200)
          expect(second).toMatchObject({ total: 3, next_page: null })
          expect(second.events.map((e) => e.event)).toEqual(["page.one"])
        }))

      it.effect("refuses a page token that is not one (403), a limit above 50 and an unknown criterion (422)", () =>
        Effect.gen(function* () {
          expect((yield* request("GET", "/events/filter/next?page-token=not-a-token")).status).toBe(403)
          expect((yield* request("POST", "/events/filter", { body: { limit: 51 } })).status).toBe(422)
          expect((yield* request("POST", "/events/filter", { body: { filter: { unknown: 1 } } })).status).toBe(422)
        }))

      it.effect("a page token as issued, or rewritten within what could have been issued, reads its page", () =>
        Effect.gen(function* () {
          const token = yield* forgeable
          expect(token).toMatchObject({ count: 4, page_size: 1, offset: 1 })
          expect(ok(yield* nextWith(token, {}), 200).events).toHaveLength(1)
          const wider = ok(yield* nextWith(token, { page_size: 50 }), 200)
          expect(wider.events.map((e) => e.event)).toEqual(["forged.b", "forged.c", "forged.d"])
          expect(wider.next_page).toBe(null)
        }))

      for (const forged of [{ page_size: 51 }, { page_size: 10_000_000 }, { page_size: -1 }, { offset: -1 }, { offset: 5 }, { count: -1 }, { page_size: 1.5 }]) {
        it.effect(`takes back only page tokens it could have issued: ${JSON.stringify(forged)} is 403`, () =>
          Effect.gen(function* () {
            const answer = yield* nextWith(yield* forgeable, forged)
            expect(answer.status).toBe(403)
            expect(answer.body).toEqual({ detail: "Forbidden" })
            expect((yield* request("GET", "/health")).status).toBe(200)
          }))
      }
    })

    describe("filters", () => {
      const byName: Array<readonly [string, Record<string, unknown>, (found: Array<Json>) => void]> = [
        ["by name", { name: ["filters.flow-run.Failed"] }, (found) => expect(found).toEqual(["filters.flow-run.Failed"])],
        ["excluding names", { exclude_name: ["filters.flow-run.Failed"] }, (found) => expect(found).toHaveLength(2)],
        ["excluding prefixes", { exclude_prefix: ["filters.flow-run.C"] }, (found) => expect(found).toEqual(["filters.flow-run.Failed"])]
      ]
      for (const [title, event, check] of byName) {
        it.effect(`events ${title}`, () =>
          Effect.gen(function* () {
            yield* runEvents
            check(yield* names({ event: { ...runScope, ...event }, order: "ASC" }))
          }))
      }

      const byResource: Array<readonly [string, (c: { readonly id: string }) => Record<string, unknown>, (found: Array<Json>) => void]> = [
        ["by resource id", () => ({ resource: { id: ["prefect.flow-run.b"] } }), (found) => expect(found).toEqual(["run-b"])],
        ["by resource id prefix", () => ({ resource: { id_prefix: ["prefect.flow-run."] } }), (found) => expect(found).toEqual(["run-a", "run-b", "run-c"])],
        ["by a resource label glob", () => ({ resource: { labels: { "prefect.resource.id": "prefect.flow-run.*" } } }), (found) => expect(found).toHaveLength(3)],
        ["by a resource label", () => ({ resource: { labels: { "prefect.state-type": "COMPLETED" } } }), (found) => expect(found).toEqual(["run-a", "run-c"])],
        ["by a negated resource label", () => ({ resource: { labels: { "prefect.state-type": "!COMPLETED" } } }), (found) => expect(found).toEqual(["run-b"])],
        ["by any of some resource labels", () => ({ resource: { labels: { "prefect.resource.name": ["run-?", "other"] } } }), (found) => expect(found).toHaveLength(3)],
        ["by a related label", () => ({ related: { labels: { "prefect.resource.id": "prefect.tag.prod" } } }), (found) => expect(found).toEqual(["run-a"])],
        ["by a related role", () => ({ related: { role: ["tag"] } }), (found) => expect(found).toEqual(["run-a", "run-b"])],
        ["by related resources in roles", () => ({ related: { resources_in_roles: [["prefect.tag.dev", "tag"]] } }), (found) => expect(found).toEqual(["run-b"])],
        ["by several related filters, all of them", () => ({ related: [{ id: ["prefect.flow.f1"] }, { id: ["prefect.tag.dev"] }] }), (found) => expect(found).toEqual(["run-b"])],
        // A related filter does not look at the event's own resource.
        ["by related id, not the event's own resource", () => ({ related: { id: ["prefect.flow-run.a"] } }), (found) => expect(found).toEqual([])],
        ["by any resource's id", () => ({ any_resource: { id: ["prefect.flow-run.a"] } }), (found) => expect(found).toEqual(["run-a"])],
        ["by any resource's labels", () => ({ any_resource: { labels: { "prefect.resource.role": "tag" } } }), (found) => expect(found).toEqual(["run-a", "run-b"])],
        ["by event id", (c) => ({ id: { id: [c.id] } }), (found) => expect(found).toEqual(["run-c"])],
        ["by text", () => ({ text: { query: "failed" } }), (found) => expect(found).toEqual(["run-b"])],
        ["by text with an exclusion", () => ({ text: { query: "completed -prod" } }), (found) => expect(found).toEqual(["run-c"])]
      ]
      for (const [title, filter, check] of byResource) {
        it.effect(`events ${title}`, () =>
          Effect.gen(function* () {
            const { c } = yield* runEvents
            check(yield* resourceNames(filter(c)))
          }))
      }

      it.effect("events by the time they occurred", () =>
        Effect.gen(function* () {
          const { at } = yield* runEvents
          expect(yield* resourceNames({ occurred: { since: new Date(at - 35_000).toISOString(), until: new Date(at - 25_000).toISOString() } })).toEqual(["run-b"])
        }))

      it.effect("distinct resources count each resource once", () =>
        Effect.gen(function* () {
          yield* runEvents
          const res = yield* request("POST", "/events/filter", { body: { filter: { event: runScope, resource: { distinct: true, id_prefix: ["prefect.flow-run."] } } } })
          expect(res.body.total).toBe(3)
        }))
    })

    describe("counts", () => {
      it.effect("by event", () =>
        Effect.gen(function* () {
          const byEvent = yield* countBy("event", { filter: yield* counted })
          expect(byEvent.map((c) => [c.value, c.count])).toEqual([["count.a", 3], ["count.b", 1]])
        }))

      it.effect("by resource, labelled with its newest name", () =>
        Effect.gen(function* () {
          const byResource = yield* countBy("resource", { filter: yield* counted })
          expect(byResource[0]).toMatchObject({ value: "thing.count.a", label: "Newest name", count: 3 })
        }))

      it.effect("by day, every day of the window included", () =>
        Effect.gen(function* () {
          const byDay = yield* countBy("day", { filter: yield* counted })
          expect(byDay.map((c) => [c.label, c.count])).toEqual([
            ["2026-01-31T00:00:00+00:00", 0],
            ["2026-02-01T00:00:00+00:00", 0],
            ["2026-02-02T00:00:00+00:00", 1],
            ["2026-02-03T00:00:00+00:00", 3]
          ])
          expect(byDay[3]).toMatchObject({ start_time: "2026-02-03T00:00:00.000Z", end_time: "2026-02-03T23:59:59.999Z" })
        }))

      it.effect("by time, in buckets of a unit and an interval", () =>
        Effect.gen(function* () {
          const filter = yield* counted
          const byHours = yield* countBy("time", { filter: { ...filter, occurred: { since: new Date(NOON - 3 * HOUR * 1000).toISOString() } }, time_unit: "hour", time_interval: 1 })
          // 09:00, 10:00 and 11:00: the events of 10:00, 11:00 and 11:59.
          expect(byHours.map((c) => c.count)).toEqual([0, 1, 2])
        }))

      it.effect("refuse too many buckets, too short an interval, dates outside years 1–9999 and an unknown unit (422)", () =>
        Effect.gen(function* () {
          const filter = yield* counted
          const tooMany = yield* request("POST", "/events/count-by/time", { body: { filter, time_unit: "second" } })
          expect(tooMany.status).toBe(422)
          expect(tooMany.body.detail).toMatch(/^The given interval would create \d+ buckets, which is too many/)
          expect((yield* request("POST", "/events/count-by/time", { body: { filter, time_interval: 0.001 } })).status).toBe(422)
          // Buckets so long that they would start or end outside years 1–9999.
          const huge = yield* request("POST", "/events/count-by/time", { body: { filter, time_unit: "week", time_interval: 2.2e30 } })
          expect(huge.status).toBe(422)
          expect(huge.body.detail).toMatch(/outside the supported range of dates/)
          expect((yield* request("POST", "/events/count-by/weeks", { body: { filter } })).status).toBe(422)
        }))
    })

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

    it.effect("over /events/in, keeps the events before one over a limit or misshapen, once each, and closes with 1007 at it", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.now())
        const bad = yield* badEvents("in")
        const repeated = yield* makeEvent("in.repeated", 4)
        const overSize = opened(yield* connect("/events/in"))
        overSize.send({ type: "auth", token: null })
        expect(yield* Effect.promise(() => overSize.next())).toEqual({ type: "auth_success" })
        for (const event of [repeated, yield* makeEvent("in.first", 3), repeated, bad.big, yield* makeEvent("in.after-big", 1)]) overSize.send(event)
        const closed = yield* Effect.promise(() => overSize.closed)
        expect(closed.code).toBe(1007)
        expect(closed.reason).toMatch(/^Invalid event: Value error, The event is \d+ bytes; events may be at most 4000 bytes$/)

        const misshapen = opened(yield* connect("/events/in"))
        misshapen.send({ type: "auth", token: null })
        expect(yield* Effect.promise(() => misshapen.next())).toEqual({ type: "auth_success" })
        for (const event of [yield* makeEvent("in.second", 2), bad.noRole, yield* makeEvent("in.after-misshapen", 1)]) misshapen.send(event)
        const refused = yield* Effect.promise(() => misshapen.closed)
        expect(refused.code).toBe(1007)
        // Schema's account of the problem, cut to what a close frame holds.
        expect(refused.reason).toMatch(/^Invalid event: Event\n/)

        const limits = opened(yield* connect("/events/in"))
        limits.send({ type: "auth", token: null })
        expect(yield* Effect.promise(() => limits.next())).toEqual({ type: "auth_success" })
        limits.send(bad.labels)
        expect((yield* Effect.promise(() => limits.closed)).reason).toBe("Invalid event: Value error, The maximum number of labels per resource is 6")
        yield* persist
        expect(yield* names({ event: { prefix: ["in."] }, order: "ASC" })).toEqual(["in.repeated", "in.first", "in.second"])
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
