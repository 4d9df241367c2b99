/**
 * The server's Layers wire themselves: each service brings its dependencies, and Layers are memoised
 * by reference within one build, so a service many depend on is one instance — the one the handlers
 * use, the one the background services use, and the one a test reads from the server's context.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Queue, TestClock } from "effect"
import { EventLog } from "../src/events/log.ts"
import type { ReceivedEvent } from "../src/events/schemas.ts"
import { Transitions } from "../src/orchestration/transitions.ts"
import { apiServerWith } from "../src/server.ts"
import { layer as settingsLayer } from "../src/settings/settings.ts"
import { ok } from "./support/api.ts"
import { TestDatabase } from "./support/database.ts"
import { eventually } from "./support/eventually.ts"
import { buildInServer, request, testServer } from "./support/server.ts"
import { runBackgroundServices } from "../src/services/registry.ts"
import { realClock } from "../src/domain/time.ts"

/** The next event on `events` that `matches`. */
const nextMatching = (events: Queue.Dequeue<ReceivedEvent>, matches: (event: ReceivedEvent) => boolean) =>
  Effect.gen(function* () {
    while (true) {
      const event = yield* Queue.take(events)
      if (matches(event)) return event
    }
  })

describe("the server's Layers", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.scoped("the handlers publish to the Transitions the server's context holds", () =>
      Effect.gen(function* () {
        const seen = yield* Effect.flatMap(Transitions, (transitions) => transitions.subscribe)
        const flowId = (yield* request("POST", "/flows/", { body: { name: "wired" } })).body.id
        const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })).body
        expect(yield* Queue.take(seen)).toMatchObject({ kind: "flow_run", run_id: run.id })
      })
    )

    it.scoped("a service many depend on is built once: run state events reach the context's EventLog", () =>
      Effect.gen(function* () {
        // Transitions is a dependency of RunStatesRepo (under FlowRunsRepo) and of the event relay
        // (its wake-up); EventLog of the relay, Events, the persister and the triggers. Built twice,
        // the relay would wait for transitions nobody publishes to it, and the event come late.
        const events = yield* Effect.flatMap(EventLog, (log) => log.subscribe)
        yield* buildInServer(runBackgroundServices((s) => s.name === "event_persister" && s.loop === "outbox"))
        const flowId = (yield* request("POST", "/flows/", { body: { name: "wired-events" } })).body.id
        const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })).body
        // Woken by the transition, the relay writes the event at once (without it, only at its next look, seconds later).
        const event = yield* nextMatching(events, (e) => e.resource["prefect.resource.id"] === `prefect.flow-run.${run.id}`).pipe(
          Effect.timeoutFail({ duration: Duration.seconds(2), onTimeout: () => new Error("the relay was not woken by the transition") }),
          Effect.withClock(realClock)
        )
        expect(event.event).toBe("prefect.flow-run.Pending")
      })
    )
  })
})

/**
 * The server as `baton server start` composes it (handlers and background services, no AreasLive),
 * on the test database. The services this check does not use are off: their registrations are built
 * all the same, but their loops would only add work to every TestClock step.
 */
const composedServer = apiServerWith().pipe(
  Layer.provideMerge(TestDatabase),
  Layer.provideMerge(
    settingsLayer({
      "server.api.host": "127.0.0.1",
      "server.api.port": 0,
      "server.concurrency.lease_storage": "memory",
      "server.services.cancellation_cleanup.enabled": false,
      "server.services.foreman.enabled": false,
      "server.services.late_runs.enabled": false,
      "server.services.pause_expirations.enabled": false,
      "server.services.scheduler.enabled": false,
      "server.services.task_run_recorder.enabled": false,
      "server.services.triggers.enabled": false
    })
  )
)

describe("the handlers and the background services of one server", () => {
  layer(composedServer, { timeout: 60_000 })((it) => {
    it.effect("share the leases in memory: the repossessor gives back the slots of a lease taken over HTTP", () =>
      Effect.gen(function* () {
        // The handlers and the repossessor each provide ConcurrencySlots (over LeaseStorageLive): were
        // they two instances, the repossessor would never see this lease and the slot would stay taken.
        const limit = ok(yield* request("POST", "/v2/concurrency_limits/", { body: { name: "wired-lease", limit: 1 } }), 201)
        ok(yield* request("POST", "/v2/concurrency_limits/increment-with-lease", { body: { slots: 1, names: ["wired-lease"], lease_duration: 60 } }), 200)
        const activeSlots = Effect.map(request("GET", `/v2/concurrency_limits/${limit.id}`), (res) => ok(res, 200).active_slots as number)
        expect(yield* activeSlots).toBe(1)
        yield* TestClock.adjust(Duration.seconds(61))
        // Each step wakes the repossessor's next iteration (every 15 s), whenever the last one ended.
        const slots = yield* eventually(
          Effect.gen(function* () {
            yield* TestClock.adjust(Duration.seconds(15))
            const active = yield* activeSlots
            if (active !== 0) return yield* Effect.fail(`${active} slots still taken`)
            return active
          })
        )
        expect(slots).toBe(0)
      })
    )

    it.effect("share one EventBus: an event received over HTTP is written by the persister", () =>
      Effect.gen(function* () {
        const id = crypto.randomUUID()
        const occurred = new Date(yield* TestClock.currentTimeMillis).toISOString()
        const event = { id, occurred, event: "wired.event", resource: { "prefect.resource.id": `wired.${id}` } }
        ok(yield* request("POST", "/events", { body: [event] }), 204)
        const filter = { resource: { id: [`wired.${id}`] }, occurred: { since: "1970-01-01T00:00:00Z" } }
        const stored = yield* eventually(
          Effect.flatMap(request("POST", "/events/filter", { body: { filter } }), (res) => {
            const events = ok(res, 200).events
            return events.length === 0 ? Effect.fail("not written yet") : Effect.succeed(events.map((e) => e.id))
          })
        )
        expect(stored).toEqual([id])
      })
    )
  })
})
