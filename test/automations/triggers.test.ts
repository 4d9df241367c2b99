import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Schema, TestClock } from "effect"
import { AutomationActions } from "../../src/automations/actions.ts"
import { TriggeredActionsRepo } from "../../src/automations/actions-repo.ts"
import { TriggersEngine } from "../../src/automations/triggers.ts"
import { EventPersister } from "../../src/events/persister.ts"
import { EventsRepo } from "../../src/events/repo.ts"
import { ReceivedEvent } from "../../src/events/schemas.ts"
import { Automation } from "../../src/automations/schemas.ts"
import { ok, okAs } from "../support/api.ts"
import { type Json, request, testServer } from "../support/server.ts"

let counter = 0
const eventId = () => `00000000-0000-4000-9000-${String(++counter).padStart(12, "0")}`

/** An event `secondsAgo` before the test clock's now, about resource `resource`. */
const event = (name: string, resource: string, secondsAgo = 0, extra: Record<string, unknown> = {}) =>
  Effect.map(Clock.currentTimeMillis, (millis) => ({
    id: eventId(),
    occurred: new Date(millis - secondsAgo * 1000).toISOString(),
    event: name,
    resource: { "prefect.resource.id": resource },
    ...extra
  }))

const send = (...events: Array<unknown>) => Effect.map(request("POST", "/events", { body: events }), (res) => expect(res.status).toBe(204))

/** Writes what was sent into the event log, lets the triggers service evaluate it, then performs the queued actions. */
const evaluate = Effect.gen(function* () {
  yield* Effect.flatMap(EventPersister, (p) => p.drain)
  yield* Effect.flatMap(TriggersEngine, (engine) => engine.drain)
  yield* Effect.flatMap(AutomationActions, (actions) => actions.drain)
})
const periodic = Effect.gen(function* () {
  yield* Effect.flatMap(TriggersEngine, (engine) => engine.periodicTick)
  yield* Effect.flatMap(AutomationActions, (actions) => actions.drain)
})

/** The automation's own events (triggered, resolved, actions), oldest first. */
const automationEvents = (automationId: string) =>
  Effect.gen(function* () {
    yield* evaluate
    yield* Effect.flatMap(EventPersister, (p) => p.drain)
    const res = yield* request("POST", "/events/filter", {
      body: {
        filter: {
          resource: { id: [`prefect.automation.${automationId}`] },
          event: { exclude_name: ["prefect.automation.created", "prefect.automation.updated", "prefect.automation.deleted"] },
          occurred: { since: "1970-01-01T00:00:00Z" },
          order: "ASC"
        }
      }
    })
    return ok(res, 200).events
  })

const names = (events: Json) => events.map((e) => e.event)

const create = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/automations/", { body: { actions: [{ type: "do-nothing" }], ...body } }), (res) => okAs(Automation, res, 201))

const START = Date.UTC(2026, 5, 1, 12, 0, 0)

describe("the triggers service", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("a reactive trigger fires when `threshold` events come within `within` seconds, then counts afresh", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(START)
        const automation = yield* create({
          name: "three failures",
          trigger: { posture: "Reactive", expect: ["thing.failed"], match: { "prefect.resource.id": "thing.a.*" }, threshold: 3, within: 60 }
        })
        yield* evaluate
        yield* send(yield* event("thing.failed", "thing.a.1"), yield* event("thing.failed", "thing.other"), yield* event("thing.ok", "thing.a.1"))
        yield* TestClock.adjust("10 seconds")
        yield* send(yield* event("thing.failed", "thing.a.2"))
        expect(names(yield* automationEvents(automation.id))).toEqual([])
        yield* TestClock.adjust("10 seconds")
        const third = yield* event("thing.failed", "thing.a.3")
        yield* send(third)
        const fired = yield* automationEvents(automation.id)
        expect(names(fired).sort()).toEqual(["prefect.automation.action.executed", "prefect.automation.action.triggered", "prefect.automation.triggered"])
        const executed = fired.find((e) => e.event === "prefect.automation.action.executed")
        const triggered = fired.find((e) => e.event === "prefect.automation.triggered")!
        expect(triggered.resource).toMatchObject({ "prefect.resource.name": "three failures", "prefect.posture": "Reactive" })
        expect(triggered.related).toEqual([{ "prefect.resource.id": `prefect.event.${third.id}`, "prefect.resource.role": "triggering-event" }])
        expect(triggered.payload.triggering_event.id).toBe(third.id)
        expect(executed!.payload).toMatchObject({ action_index: 0, action_type: "do-nothing" })

        // The window after firing starts over: two more failures are not enough…
        yield* TestClock.adjust("50 seconds")
        yield* send(yield* event("thing.failed", "thing.a.4"), yield* event("thing.failed", "thing.a.5"))
        expect(names(yield* automationEvents(automation.id))).toHaveLength(3)
        // …three within the window are.
        yield* send(yield* event("thing.failed", "thing.a.6"))
        expect(names(yield* automationEvents(automation.id)).filter((n) => n === "prefect.automation.triggered")).toHaveLength(2)
      }))

    it.effect("for_each keeps a count per label value, and the firing carries the labels", () =>
      Effect.gen(function* () {
        const automation = yield* create({
          name: "per resource",
          trigger: { posture: "Reactive", expect: ["per.failed"], for_each: ["prefect.resource.id"], threshold: 2, within: 30 }
        })
        yield* evaluate
        yield* send(yield* event("per.failed", "per.r1"), yield* event("per.failed", "per.r2"))
        expect(yield* automationEvents(automation.id)).toEqual([])
        yield* TestClock.adjust("1 second")
        yield* send(yield* event("per.failed", "per.r1"))
        const fired = (yield* automationEvents(automation.id)).filter((e) => e.event === "prefect.automation.triggered")
        expect(fired).toHaveLength(1)
        expect(fired[0].payload.triggering_labels).toEqual({ "prefect.resource.id": "per.r1" })
      }))

    it.effect("match_related and `related:<role>:<label>` for_each keys", () =>
      Effect.gen(function* () {
        const automation = yield* create({
          name: "related",
          trigger: {
            posture: "Reactive",
            expect: ["rel.*"],
            match_related: { "prefect.resource.role": "flow", "prefect.resource.name": "!skip-*" },
            for_each: ["related:flow:prefect.resource.name"],
            threshold: 1,
            within: 0
          }
        })
        yield* evaluate
        const related = (name: string) => ({ related: [{ "prefect.resource.id": `prefect.flow.${name}`, "prefect.resource.role": "flow", "prefect.resource.name": name }] })
        yield* send(yield* event("rel.x", "r", 0, related("skip-me")), yield* event("rel.x", "r", 0, related("keep")), yield* event("other", "r", 0, related("keep")))
        const fired = (yield* automationEvents(automation.id)).filter((e) => e.event === "prefect.automation.triggered")
        expect(fired.map((e) => e.payload.triggering_labels)).toEqual([{ "related:flow:prefect.resource.name": "keep" }])
      }))

    it.effect("a proactive trigger with `after` watches each resource from its starting event, and fires when the next does not come", () =>
      Effect.gen(function* () {
        const automation = yield* create({
          name: "heartbeat",
          trigger: { posture: "Proactive", after: ["hb.beat"], expect: ["hb.beat", "hb.done"], for_each: ["prefect.resource.id"], threshold: 1, within: 30 }
        })
        yield* evaluate
        yield* send(yield* event("hb.beat", "hb.worker-1"), yield* event("hb.beat", "hb.worker-2"))
        yield* evaluate
        yield* TestClock.adjust("20 seconds")
        // worker-2 beats again (a new window), worker-1 does not.
        yield* send(yield* event("hb.beat", "hb.worker-2"))
        yield* evaluate
        yield* periodic
        expect(yield* automationEvents(automation.id)).toEqual([])
        yield* TestClock.adjust("15 seconds")
        yield* periodic
        const fired = (yield* automationEvents(automation.id)).filter((e) => e.event === "prefect.automation.triggered")
        expect(fired).toHaveLength(1)
        expect(fired[0].resource["prefect.posture"]).toBe("Proactive")
        expect(fired[0].payload.triggering_labels).toEqual({ "prefect.resource.id": "hb.worker-1" })
        expect(fired[0].payload.triggering_event.event).toBe("hb.beat")
        // worker-2 finishes within its window: nothing more.
        yield* send(yield* event("hb.done", "hb.worker-2"))
        yield* evaluate
        yield* TestClock.adjust("30 seconds")
        yield* periodic
        expect((yield* automationEvents(automation.id)).filter((e) => e.event === "prefect.automation.triggered")).toHaveLength(1)
      }))

    it.effect("a proactive trigger without for_each fires when a window passes in silence, and resolves when events come back", () =>
      Effect.gen(function* () {
        const automation = yield* create({
          name: "silence",
          trigger: { posture: "Proactive", expect: ["silence.ping"], within: 15 },
          actions_on_resolve: [{ type: "do-nothing" }]
        })
        yield* evaluate
        yield* periodic
        yield* TestClock.adjust("10 seconds")
        yield* periodic
        expect(yield* automationEvents(automation.id)).toEqual([])
        yield* TestClock.adjust("6 seconds")
        yield* periodic
        expect(names(yield* automationEvents(automation.id))).toContain("prefect.automation.triggered")
        // A ping in the next window: when it closes, the automation resolves.
        yield* send(yield* event("silence.ping", "silence"))
        yield* evaluate
        yield* TestClock.adjust("16 seconds")
        yield* periodic
        const after = names(yield* automationEvents(automation.id))
        expect(after.filter((n) => n === "prefect.automation.triggered")).toHaveLength(1)
        expect(after).toContain("prefect.automation.resolved")
        // `actions` run on triggering, actions_on_resolve on resolving: one action each.
        expect(after.filter((n) => n === "prefect.automation.action.executed")).toHaveLength(2)
      }))

    it.effect("a compound trigger fires once `require` of its triggers fired within its window", () =>
      Effect.gen(function* () {
        const child = (name: string) => ({ posture: "Reactive", expect: [name], threshold: 1, within: 0 })
        const all = yield* create({ name: "both", trigger: { type: "compound", require: "all", within: 60, triggers: [child("c.a"), child("c.b")] } })
        const either = yield* create({ name: "either", trigger: { type: "compound", require: "any", within: null, triggers: [child("c.a"), child("c.b")] } })
        yield* evaluate
        yield* send(yield* event("c.a", "c"))
        yield* evaluate
        expect(yield* automationEvents(all.id)).toEqual([])
        expect(names(yield* automationEvents(either.id))).toContain("prefect.automation.triggered")
        // b too late for a's window: not yet; a again then completes the pair.
        yield* TestClock.adjust("90 seconds")
        yield* send(yield* event("c.b", "c"))
        yield* evaluate
        expect(yield* automationEvents(all.id)).toEqual([])
        yield* TestClock.adjust("5 seconds")
        yield* send(yield* event("c.a", "c"))
        const fired = (yield* automationEvents(all.id)).filter((e) => e.event === "prefect.automation.triggered")
        expect(fired).toHaveLength(1)
        expect(fired[0].resource["prefect.posture"]).toBeUndefined()
      }))

    it.effect("a sequence trigger fires only when its triggers fire in order", () =>
      Effect.gen(function* () {
        const child = (name: string) => ({ posture: "Reactive", expect: [name], threshold: 1, within: 0 })
        const automation = yield* create({ name: "in order", trigger: { type: "sequence", within: 120, triggers: [child("s.first"), child("s.second")] } })
        yield* evaluate
        yield* send(yield* event("s.second", "s"))
        yield* evaluate
        yield* TestClock.adjust("1 second")
        yield* send(yield* event("s.first", "s"))
        yield* evaluate
        expect(yield* automationEvents(automation.id)).toEqual([])
        yield* TestClock.adjust("1 second")
        yield* send(yield* event("s.second", "s"))
        expect(names(yield* automationEvents(automation.id))).toContain("prefect.automation.triggered")
      }))

    it.effect("disabled automations are not evaluated; enabling one takes effect at once", () =>
      Effect.gen(function* () {
        const automation = yield* create({ name: "off", enabled: false, trigger: { posture: "Reactive", expect: ["off.x"], within: 0 } })
        yield* evaluate
        yield* send(yield* event("off.x", "off"))
        expect(yield* automationEvents(automation.id)).toEqual([])
        yield* request("PATCH", `/automations/${automation.id}`, { body: { enabled: true } })
        yield* TestClock.adjust("1 second")
        yield* send(yield* event("off.x", "off"))
        expect(names(yield* automationEvents(automation.id))).toContain("prefect.automation.triggered")
        yield* request("DELETE", `/automations/${automation.id}`)
        yield* send(yield* event("off.x", "off"))
        yield* evaluate
      }))

    it.effect("an event that follows another waits for it", () =>
      Effect.gen(function* () {
        const automation = yield* create({
          name: "ordered",
          trigger: { type: "sequence", within: 60, triggers: [{ posture: "Reactive", expect: ["o.one"], within: 0 }, { posture: "Reactive", expect: ["o.two"], within: 0 }] }
        })
        yield* evaluate
        const one = yield* event("o.one", "o", 2)
        const two = { ...(yield* event("o.two", "o", 1)), follows: one.id }
        // The follower arrives first; it is evaluated after its leader.
        yield* send(two)
        yield* evaluate
        yield* TestClock.adjust("1 second")
        yield* send(one)
        expect(names(yield* automationEvents(automation.id))).toContain("prefect.automation.triggered")
      }))

    it.effect("a held follower whose leader another process stored is evaluated at the next periodic pass", () =>
      Effect.gen(function* () {
        const automation = yield* create({
          name: "after-elsewhere",
          trigger: { posture: "Reactive", expect: ["e.two"], match: { "prefect.resource.id": "e" }, threshold: 1, within: 0 }
        })
        yield* evaluate
        const leader = yield* event("e.one", "e", 2)
        yield* send({ ...(yield* event("e.two", "e", 1)), follows: leader.id })
        expect(names(yield* automationEvents(automation.id))).toEqual([])
        // Received and stored by another process: it never comes through this one's bus.
        const stored = Schema.decodeUnknownSync(ReceivedEvent)({ ...leader, received: leader.occurred, payload: {}, related: [] })
        yield* Effect.flatMap(EventsRepo, (repo) => repo.write([stored]))
        yield* periodic
        expect(names(yield* automationEvents(automation.id))).toContain("prefect.automation.triggered")
      }))

    it.effect("a firing's actions are stored with it: those a process claimed and never finished are performed by another once its claim runs out", () =>
      Effect.gen(function* () {
        const automation = yield* create({
          name: "durable actions",
          trigger: { posture: "Reactive", expect: ["durable.ping"], match: { "prefect.resource.id": "durable" }, threshold: 1, within: 0 }
        })
        yield* evaluate
        yield* send(yield* event("durable.ping", "durable"))
        // The trigger fires; a process claims the action and dies before performing it.
        yield* Effect.flatMap(EventPersister, (p) => p.drain)
        yield* Effect.flatMap(TriggersEngine, (engine) => engine.drain)
        const at = new Date(yield* Clock.currentTimeMillis)
        const claimed = yield* Effect.flatMap(TriggeredActionsRepo, (repo) => repo.claim(at, new Date(at.getTime() + 5 * 60_000), 50))
        expect(claimed).toHaveLength(1)
        const actionEvents = Effect.map(automationEvents(automation.id), (events) => (names(events) as unknown as Array<string>).filter((name) => name.startsWith("prefect.automation.action.")))
        expect(yield* actionEvents).toEqual([])
        yield* TestClock.adjust("5 minutes")
        yield* TestClock.adjust("1 second")
        expect((yield* actionEvents).sort()).toEqual(["prefect.automation.action.executed", "prefect.automation.action.triggered"])
        // Performed once: forgotten with its events.
        yield* TestClock.adjust("10 minutes")
        expect(yield* actionEvents).toHaveLength(2)
      }))
  })
})
