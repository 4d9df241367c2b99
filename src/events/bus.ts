/**
 * The event bus (server.events.messaging_broker = "memory"): received events are published here
 * once each (a repeated id within the recent ones is dropped, as the reference's messaging cache
 * drops it) and every subscriber (the persister, live websockets) gets them in order.
 */
import { Effect, PubSub, type Queue, type Scope } from "effect"
import { Settings } from "../settings/settings.ts"
import type { ReceivedEvent } from "./schemas.ts"

/** How many recent event ids are remembered to drop repeats. */
const RECENT_IDS = 10_000

export class EventBus extends Effect.Service<EventBus>()("baton/EventBus", {
  scoped: Effect.gen(function* () {
    const settings = yield* Settings
    if (settings.server.events.messaging_broker !== "memory") {
      yield* Effect.logWarning(
        `server.events.messaging_broker=${settings.server.events.messaging_broker} is not available yet; events stay in this process`
      )
    }
    // A subscriber that falls further behind than this loses the oldest events, not the server its memory.
    const capacity = settings.server.services.event_persister.queue_max_size
    const hub = yield* Effect.acquireRelease(PubSub.sliding<ReceivedEvent>(capacity), PubSub.shutdown)
    const recent = new Set<string>()

    const remember = (id: string) => {
      if (recent.has(id)) return false
      recent.add(id)
      if (recent.size > RECENT_IDS) recent.delete(recent.values().next().value!)
      return true
    }

    /** Publishes the events not published recently. */
    const publish = (events: ReadonlyArray<ReceivedEvent>) =>
      Effect.suspend(() => {
        const fresh = events.filter((event) => remember(event.id))
        return fresh.length === 0 ? Effect.void : Effect.asVoid(PubSub.publishAll(hub, fresh))
      })

    /** Every event published from now on, for the scope's life. */
    const subscribe: Effect.Effect<Queue.Dequeue<ReceivedEvent>, never, Scope.Scope> = PubSub.subscribe(hub)

    return { publish, subscribe } as const
  })
}) {}
