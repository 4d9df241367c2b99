/**
 * The server's Layers wire themselves: each service brings its dependencies, and Layers are memoised
 * by reference within one build, so a service many depend on is one instance — the one the handlers
 * use, the one the background services use, and the one a test reads from the server's context.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { EventBus } from "../src/events/bus.ts"
import type { ReceivedEvent } from "../src/events/schemas.ts"
import { Transitions } from "../src/orchestration/transitions.ts"
import { request, testServer } from "./support/server.ts"

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

    it.scoped("a service many depend on is built once: run state events reach the context's EventBus", () =>
      Effect.gen(function* () {
        // Transitions is a dependency of RunStatesRepo (under FlowRunsRepo) and of the run events;
        // EventBus of the run events, Events, the persister and the triggers. Built twice, the event
        // would go to a bus nobody here reads.
        const events = yield* Effect.flatMap(EventBus, (bus) => bus.subscribe)
        const flowId = (yield* request("POST", "/flows/", { body: { name: "wired-events" } })).body.id
        const run = (yield* request("POST", "/flow_runs/", { body: { flow_id: flowId } })).body
        const event = yield* nextMatching(events, (e) => e.resource["prefect.resource.id"] === `prefect.flow-run.${run.id}`)
        expect(event.event).toBe("prefect.flow-run.Pending")
      })
    )
  })
})
