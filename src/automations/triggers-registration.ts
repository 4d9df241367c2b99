/** The triggers service's loops, and the loop that performs the actions they trigger, registered with the runner. */
import { Duration, Effect, Layer } from "effect"
import { defineService, registerServices } from "../services/runner.ts"
import { AutomationActions } from "./actions.ts"
import { TriggersEngine } from "./triggers.ts"

export const TriggersService = registerServices(
  defineService({
    name: "triggers",
    // An iteration waits for events and evaluates them.
    interval: () => Duration.zero,
    tick: Effect.flatMap(TriggersEngine, (engine) => engine.reactiveTick)
  }),
  defineService({
    name: "triggers",
    loop: "proactive",
    // Proactive triggers, reloading changed automations and sweeping closed buckets, at this granularity.
    interval: (s) => s.server.events.proactive_granularity,
    // Proactive triggers and the bucket sweep are for the process leading "triggers".
    leadsPart: true,
    tick: Effect.flatMap(TriggersEngine, (engine) => engine.periodicTick)
  }),
  defineService({
    name: "triggers",
    loop: "automation changes",
    // Listens until the connection is lost, then listens again after the reconnect interval.
    interval: (s) => Duration.seconds(s.server.services.triggers.pg_notify_reconnect_interval_seconds),
    tick: Effect.flatMap(TriggersEngine, (engine) => engine.listenForChanges)
  }),
  defineService({
    name: "triggers",
    loop: "actions",
    // An iteration waits for triggered actions and performs them.
    interval: () => Duration.zero,
    tick: Effect.flatMap(AutomationActions, (actions) => actions.tick)
  })
).pipe(Layer.provide([AutomationActions.Default, TriggersEngine.Default]))
