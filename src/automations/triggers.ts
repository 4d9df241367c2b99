/**
 * The triggers service: evaluates the enabled automations against the events on the bus.
 *
 * Each event trigger keeps one bucket per for_each key: a window [start, end) and the number of
 * expected events seen in it. A Reactive trigger fires as soon as its bucket holds `threshold`
 * events, then waits for the rest of the window; a Proactive trigger fires when a window closes with
 * fewer than `threshold` events (checked every `proactive_granularity`). `after` events open a
 * bucket; without them buckets follow each other. A firing of a trigger inside a compound or
 * sequence trigger is kept as a child firing until enough children (in order, for a sequence) have
 * fired within the parent's window. A firing emits `prefect.automation.triggered` and queues the
 * automation's actions; a bucket that had fired and then closes without firing again resolves the
 * automation (`prefect.automation.resolved`, actions_on_resolve).
 *
 * All evaluation is serialised (one actor): the reactive loop and the periodic loop take turns.
 * Automations are loaded once and reloaded when they change: at once for changes made in this
 * process, and by comparing the automations' snapshot (newest update, count) every period for
 * changes made by other replicas.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Chunk, Duration, Effect, Queue } from "effect"
import * as Notifications from "../database/notifications.ts"
import { newId } from "../domain/ids.ts"
import { now } from "../domain/time.ts"
import { EventBus } from "../events/bus.ts"
import { EventsRepo } from "../events/repo.ts"
import type { ReceivedEvent } from "../events/schemas.ts"
import { Events } from "../events/service.ts"
import { Settings } from "../settings/settings.ts"
import { defineService, registerServices } from "../services/runner.ts"
import { AutomationActions } from "./actions.ts"
import { type Bucket, BucketsRepo } from "./buckets-repo.ts"
import { AUTOMATION_CHANGES_CHANNEL, type AutomationChange, AutomationChanges } from "./changes.ts"
import {
  bucketingKey,
  covers,
  expectedFirings,
  expects,
  type Firing,
  meetsThreshold,
  readyToFire,
  startsAfter,
  stateChangeEvent,
  type TriggeredAction,
  type TriggerState
} from "./firing.ts"
import { makeOrdering, PRECEDING_EVENT_LOOKBACK_MS } from "./ordering.ts"
import { type AutomationsSnapshot, AutomationsRepo } from "./repo.ts"
import { allTriggers, type Automation, type CompositeTrigger, type EventTrigger, eventTriggers, type Trigger } from "./schemas.ts"

/** A loaded trigger: the automation it belongs to and the composite trigger around it, if any. */
interface Loaded {
  readonly automation: Automation
  readonly parent: CompositeTrigger | undefined
}

/** Events the reactive loop takes from the bus at once. */
const EVENT_BATCH = 100

const parentsOf = (trigger: Trigger, parent: CompositeTrigger | undefined, into: Map<string, CompositeTrigger | undefined>) => {
  into.set(trigger.id, parent)
  if (trigger.type !== "event") for (const child of trigger.triggers) parentsOf(child, trigger, into)
  return into
}

export class TriggersEngine extends Effect.Service<TriggersEngine>()("baton/TriggersEngine", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const automationsRepo = yield* AutomationsRepo
    const buckets = yield* BucketsRepo
    const eventsRepo = yield* EventsRepo
    const events = yield* Events
    const actions = yield* AutomationActions
    const settings = yield* Settings
    const bus = yield* EventBus
    const changes = yield* AutomationChanges
    const { events: subscription, ack, start: startReading } = yield* bus.consume("triggers", settings.server.services.triggers.read_batch_size)
    const changeQueue = yield* changes.subscribe
    const lock = yield* Effect.makeSemaphore(1)
    const ordering = yield* makeOrdering(settings)

    const automations = new Map<string, Automation>()
    /** Every trigger of a loaded automation (composites too), by id. */
    const loaded = new Map<string, Loaded>()
    const eventTriggersById = new Map<string, EventTrigger>()
    const nextProactiveRun = new Map<string, number>()
    let snapshot: AutomationsSnapshot | undefined

    /**
     * Event triggers by the event names they name exactly (expect and after); those with a pattern
     * (or no expect: any event) are looked at for every event.
     */
    const byName = new Map<string, Set<string>>()
    const anyName = new Set<string>()
    const namesOf = (trigger: EventTrigger) => {
      const names = trigger.expect.length === 0 ? [] : [...trigger.expect, ...trigger.after]
      return names.length === 0 || names.some((n) => /[*?[!]/.test(n)) ? undefined : names
    }

    const forget = (id: string) => {
      const automation = automations.get(id)
      if (automation === undefined) return
      automations.delete(id)
      for (const trigger of allTriggers(automation.trigger)) {
        loaded.delete(trigger.id)
        eventTriggersById.delete(trigger.id)
        nextProactiveRun.delete(trigger.id)
        anyName.delete(trigger.id)
        if (trigger.type === "event") for (const name of namesOf(trigger) ?? []) byName.get(name)?.delete(trigger.id)
      }
    }

    const load = (automation: Automation) => {
      forget(automation.id)
      const events = eventTriggers(automation.trigger)
      if (!automation.enabled || events.length === 0) return
      automations.set(automation.id, automation)
      for (const [triggerId, parent] of parentsOf(automation.trigger, undefined, new Map())) loaded.set(triggerId, { automation, parent })
      for (const trigger of events) {
        eventTriggersById.set(trigger.id, trigger)
        const names = namesOf(trigger)
        if (names === undefined) anyName.add(trigger.id)
        else for (const name of names) byName.set(name, (byName.get(name) ?? new Set()).add(trigger.id))
      }
    }

    /** The triggers that may care about an event of this name. */
    const candidates = (name: string) =>
      [...new Set([...(byName.get(name) ?? []), ...anyName])].flatMap((id) => eventTriggersById.get(id) ?? [])

    /** Reloads everything when the automations changed since the last look (or when forced). */
    const reconcile = (force: boolean) =>
      Effect.gen(function* () {
        const current = yield* automationsRepo.snapshot
        if (!force && snapshot !== undefined && current.updated === snapshot.updated && current.count === snapshot.count) return
        const all = yield* automationsRepo.all
        for (const id of [...automations.keys()]) forget(id)
        for (const automation of all) load(automation)
        snapshot = current
      })

    const applyChanges = (pending: ReadonlyArray<AutomationChange>) =>
      Effect.gen(function* () {
        if (pending.length === 0) return
        const ids = [...new Set(pending.map((c) => c.id))]
        for (const id of ids) forget(id)
        for (const automation of yield* automationsRepo.readMany(ids)) load(automation)
        snapshot = yield* automationsRepo.snapshot
      })

    // Firing -----------------------------------------------------------------------------------

    /** The automation's state change events, then its actions for those states, queued for the actions service. */
    const act = (firing: Firing, automation: Automation) =>
      Effect.gen(function* () {
        const stateEvents = new Map<TriggerState, ReceivedEvent>()
        for (const state of (["Triggered", "Resolved"] as const).filter((s) => firing.trigger_states.includes(s))) {
          const [emitted] = yield* events.emit([stateChangeEvent(automation, firing, state, yield* newId)])
          stateEvents.set(state, emitted!)
        }
        const primary = stateEvents.get("Triggered") ?? stateEvents.get("Resolved")
        const sources: Array<[ReceivedEvent | null, Automation["actions"][number], string | null]> = []
        const triggered = stateEvents.get("Triggered")
        if (triggered) {
          for (const action of automation.actions) sources.push([firing.triggering_event, action, primary?.id ?? null])
          for (const action of automation.actions_on_trigger) sources.push([triggered, action, triggered.id])
        }
        const resolved = stateEvents.get("Resolved")
        if (resolved) for (const action of automation.actions_on_resolve) sources.push([resolved, action, resolved.id])
        const triggeredActions: Array<TriggeredAction> = []
        for (const [index, [event, action, stateEventId]] of sources.entries()) {
          triggeredActions.push({
            id: yield* newId,
            automation,
            firing,
            triggered: firing.triggered,
            triggering_labels: firing.triggering_labels,
            triggering_event: event,
            action,
            action_index: index,
            automation_triggered_event_id: stateEventId
          })
        }
        yield* actions.enqueue(triggeredActions)
      })

    const fire = (firing: Firing): Effect.Effect<void, unknown> =>
      Effect.gen(function* () {
        const entry = loaded.get(firing.trigger.id)
        if (entry === undefined) return
        if (entry.parent === undefined) return yield* act(firing, entry.automation)
        return yield* evaluateComposite(firing, entry.parent, entry.automation)
      })

    const parentFiring = (parent: CompositeTrigger, children: ReadonlyArray<Firing>, latest: Firing) =>
      Effect.gen(function* () {
        return {
          id: yield* newId,
          trigger: parent,
          trigger_states: ["Triggered"],
          triggered: yield* now,
          triggering_labels: {},
          triggering_firings: children,
          triggering_event: latest.triggering_event
        } satisfies Firing
      })

    /** A child of a compound or sequence trigger fired: fire the parent once enough children have. */
    const evaluateComposite = (firing: Firing, parent: CompositeTrigger, automation: Automation): Effect.Effect<void, unknown> =>
      Effect.gen(function* () {
        if (firing.trigger_states.includes("Resolved") && !firing.trigger_states.includes("Triggered")) return
        if (expectedFirings(parent) === 1) return yield* fire(yield* parentFiring(parent, [firing], firing))
        yield* buckets.lockComposite(parent.id)
        if (parent.within !== null) {
          yield* buckets.clearOldChildFirings(automation.id, parent.id, new Date(firing.triggered.getTime() - parent.within * 1000))
        }
        yield* buckets.upsertChildFiring(automation.id, parent.id, firing.trigger.id, firing.id, firing.triggered, firing)
        const stored = yield* buckets.childFirings(automation.id, parent.id)
        if (!stored.some((f) => f.child_firing_id === firing.id)) return
        const collected = stored.map((f) => ({ triggerId: f.child_trigger_id, triggered: f.child_fired_at }))
        if (!readyToFire(parent, collected)) return
        const ids = stored.map((f) => f.child_firing_id)
        const claimed = yield* buckets.claimChildFirings(automation.id, parent.id, ids)
        if (claimed.length !== ids.length) return
        const children = stored.map((f) => reviveFiring(f.child_firing))
        yield* fire(yield* parentFiring(parent, children, firing))
      })

    // Buckets ----------------------------------------------------------------------------------

    const within = (trigger: EventTrigger) => trigger.within * 1000
    const keyOf = (trigger: EventTrigger, automation: Automation, key: ReadonlyArray<string>) => ({
      automationId: automation.id,
      triggerId: trigger.id,
      key
    })

    /**
     * Evaluates one bucket at `at` (the event's time, or now for proactive evaluation): counts the
     * event, fires when the posture's condition holds, and moves on to the next window when the
     * current one is over. The bucket that remains, if any.
     */
    const evaluate = (
      trigger: EventTrigger,
      automation: Automation,
      start: Bucket,
      at: Date,
      event: ReceivedEvent | null
    ): Effect.Effect<Bucket | undefined, unknown> =>
      Effect.gen(function* () {
        let bucket = start
        let count = event ? 1 : 0
        const time = at.getTime()
        // An older, out-of-order event, or one for a window that already fired.
        if (time < bucket.start.getTime()) return bucket
        const immediate = trigger.posture === "Reactive" && trigger.within === 0
        if (count > 0 && (immediate || (bucket.start.getTime() <= time && time < bucket.end.getTime()))) {
          bucket = yield* buckets.increment(bucket, count, event)
          count = 0
        }
        const ready = trigger.posture === "Reactive" || bucket.end.getTime() <= time
        const meets = meetsThreshold(trigger, bucket.count)
        const labels = Object.fromEntries([...trigger.for_each].sort().map((label, i) => [label, bucket.bucketing_key[i] ?? ""]))
        let firedAt: Date | null = null
        if (ready && meets) {
          firedAt = yield* now
          yield* fire({
            id: yield* newId,
            trigger,
            trigger_states: ["Triggered"],
            triggered: firedAt,
            triggering_labels: labels,
            triggering_firings: [],
            triggering_event: event ?? bucket.last_event
          })
          yield* buckets.remove(bucket)
        } else if (time < bucket.end.getTime()) {
          // A proactive trigger whose one event both starts and satisfies it: the event starts the next window.
          if (event && trigger.posture === "Proactive" && !meets && startsAfter(trigger, event.event) && expects(trigger, event.event)) {
            yield* buckets.remove(bucket)
            return yield* buckets.startNew(
              keyOf(trigger, automation, bucket.bucketing_key),
              event.occurred,
              new Date(event.occurred.getTime() + within(trigger)),
              0,
              event,
              null
            )
          }
          return bucket
        } else if (bucket.triggered_at !== null) {
          // The window after a firing closed without the trigger firing again: the automation resolved.
          yield* fire({
            id: yield* newId,
            trigger,
            trigger_states: ["Resolved"],
            triggered: yield* now,
            triggering_labels: labels,
            triggering_firings: [],
            triggering_event: event ?? bucket.last_event
          })
        }
        if (trigger.after.length > 0) {
          // The next bucket waits for another starting event.
          yield* buckets.remove(bucket)
          return undefined
        }
        if (trigger.within === 0) return undefined
        const nextStart = new Date(Math.max(bucket.end.getTime(), time))
        const nextEnd = new Date(nextStart.getTime() + within(trigger))
        const key = keyOf(trigger, automation, bucket.bucketing_key)
        if (trigger.posture === "Reactive" && count > 0) {
          // The event belongs to the next window: count it there (it may fire it).
          const next = yield* buckets.startNew(key, nextStart, nextEnd, 0, null, firedAt)
          return yield* evaluate(trigger, automation, next, at, event)
        }
        return yield* buckets.startNew(key, nextStart, nextEnd, count, null, firedAt)
      })

    /** Evaluates the triggers interested in one event. */
    const reactive = (event: ReceivedEvent) =>
      Effect.gen(function* () {
        for (const trigger of candidates(event.event)) {
          if (!covers(trigger, event)) continue
          const automation = loaded.get(trigger.id)!.automation
          const key = keyOf(trigger, automation, bucketingKey(trigger, event))
          yield* sql.withTransaction(
            Effect.gen(function* () {
              let bucket: Bucket | undefined
              const occurred = event.occurred.getTime()
              const end = new Date(occurred + within(trigger))
              if (startsAfter(trigger, event.event)) {
                // An event that both starts and is expected starts at -1, so it counts for the next one only.
                bucket = yield* buckets.ensure(key, event.occurred, end, event, expects(trigger, event.event) ? -1 : 0)
              }
              if (bucket === undefined && trigger.after.length === 0 && expects(trigger, event.event)) {
                // A first bucket reaches back over the lookback, to catch events arriving out of order.
                bucket = yield* buckets.ensure(key, new Date(occurred - PRECEDING_EVENT_LOOKBACK_MS), end, event)
              }
              if (!expects(trigger, event.event)) return
              bucket ??= yield* buckets.read(key)
              if (bucket === undefined) return
              yield* evaluate(trigger, automation, bucket, event.occurred, event)
            })
          )
        }
      })

    /** Evaluates the event, then the events that were waiting for it. */
    const evaluateInOrder = (event: ReceivedEvent): Effect.Effect<void, unknown> =>
      Effect.gen(function* () {
        if (yield* ordering.hasBeenSeen(event.id)) return
        const at = (yield* now).getTime()
        if (event.follows !== null && !(yield* ordering.hasBeenSeen(event.follows))) {
          const leaderKnown = (yield* eventsRepo.existing([event.follows])).length > 0
          if (yield* ordering.holdBack(event, at, leaderKnown)) return
        }
        yield* reactive(event).pipe(
          Effect.catchAllCause((cause) => Effect.logError(`Automations could not evaluate event ${event.id} (${event.event})`, cause))
        )
        yield* ordering.markSeen(event.id, at)
        for (const follower of yield* ordering.releaseFollowers(event.id)) yield* evaluateInOrder(follower)
      })

    /** Evaluates one proactive trigger as of now; when it should be evaluated next. */
    const proactive = (trigger: EventTrigger, automation: Automation) =>
      Effect.gen(function* () {
        const asOf = yield* now
        let runAgainAt = asOf.getTime() + within(trigger)
        yield* sql.withTransaction(
          Effect.gen(function* () {
            if (trigger.for_each.length === 0) {
              yield* buckets.ensure(keyOf(trigger, automation, []), asOf, new Date(asOf.getTime() + within(trigger)), null)
            }
            yield* buckets.removeSatisfied(automation.id, trigger.id, trigger.threshold)
            for (const bucket of yield* buckets.forTrigger(automation.id, trigger.id)) {
              const next = yield* evaluate(trigger, automation, bucket, asOf, null)
              const end = next?.end.getTime()
              if (end !== undefined && asOf.getTime() < end && end < runAgainAt) runAgainAt = end
            }
          })
        )
        return runAgainAt
      })

    // Loops ------------------------------------------------------------------------------------

    const serialised = <A, E, R>(effect: Effect.Effect<A, E, R>) => lock.withPermits(1)(effect)

    let started = false
    const ensureStarted = Effect.gen(function* () {
      if (started) return
      yield* reconcile(true)
      started = true
    })

    /** Evaluates a batch of events in order (after applying automation changes), then acknowledges it. */
    const evaluateBatch = (batch: ReadonlyArray<ReceivedEvent>) =>
      Effect.gen(function* () {
        yield* serialised(
          Effect.gen(function* () {
            yield* ensureStarted
            yield* applyChanges(Chunk.toReadonlyArray(yield* Queue.takeAll(changeQueue)))
            for (const event of batch) yield* evaluateInOrder(event)
          })
        )
        yield* ack(batch)
      })

    /** Reactive loop: waits for events, then evaluates them. */
    const reactiveTick = Effect.zipRight(
      startReading,
      Effect.flatMap(Queue.takeBetween(subscription, 1, EVENT_BATCH), (batch) => evaluateBatch(Chunk.toReadonlyArray(batch)))
    )

    /** Evaluates the events waiting on the bus now, without waiting for more (tests, shutdown). */
    const drain = Effect.zipRight(startReading, Effect.flatMap(Queue.takeAll(subscription), (batch) => evaluateBatch(Chunk.toReadonlyArray(batch))))

    /** Periodic loop: reloads changed automations, evaluates lost followers and due proactive triggers, sweeps closed buckets. */
    const periodicTick = serialised(
      Effect.gen(function* () {
        yield* ensureStarted
        yield* applyChanges(Chunk.toReadonlyArray(yield* Queue.takeAll(changeQueue)))
        yield* reconcile(false)
        const at = yield* now
        for (const event of yield* ordering.lostFollowers(at.getTime())) yield* evaluateInOrder(event)
        for (const trigger of [...eventTriggersById.values()]) {
          if (trigger.posture !== "Proactive") continue
          const due = nextProactiveRun.get(trigger.id) ?? at.getTime()
          if (due > at.getTime()) continue
          const automation = loaded.get(trigger.id)?.automation
          if (automation === undefined) continue
          const next = yield* proactive(trigger, automation).pipe(
            Effect.catchAllCause((cause) =>
              Effect.as(Effect.logError(`Automation ${automation.id} trigger ${trigger.id} could not be evaluated proactively`, cause), undefined)
            )
          )
          if (next !== undefined) nextProactiveRun.set(trigger.id, next)
        }
        const buffer = Duration.toMillis(settings.server.events.expired_bucket_buffer)
        yield* buckets.sweep(new Date(at.getTime() - buffer))
      })
    )

    /**
     * Listens for automation changes other replicas announce (PostgreSQL LISTEN/NOTIFY) and applies
     * them at once, until the connection is taken as lost (its heartbeats stopped coming back, see
     * database/notifications.ts); the service loop listens again after
     * pg_notify_reconnect_interval_seconds.
     */
    const listenForChanges = Effect.gen(function* () {
      // The embedded database has one server process: nothing to hear from.
      if (!(yield* automationsRepo.sharedServer)) return yield* Effect.never
      const onPayload = (payload: string) =>
        Effect.gen(function* () {
          let data: { automation_id?: unknown; event_type?: unknown }
          try {
            data = JSON.parse(payload)
          } catch {
            return
          }
          const kind = data.event_type
          if (typeof data.automation_id !== "string" || (kind !== "created" && kind !== "updated" && kind !== "deleted")) return
          yield* serialised(Effect.gen(function* () {
            if (started) yield* applyChanges([{ id: data.automation_id as string, kind }])
          }))
        })
      yield* reconcile(false).pipe(serialised)
      return yield* Notifications.listen({
        channel: AUTOMATION_CHANGES_CHANNEL,
        heartbeatSeconds: settings.server.services.triggers.pg_notify_heartbeat_interval_seconds,
        onPayload
      }).pipe(Effect.provideService(PgClient.PgClient, pg), Effect.provideService(SqlClient.SqlClient, sql))
    })

    return { reactiveTick, periodicTick, drain, listenForChanges } as const
  }),
  dependencies: [
    AutomationActions.Default,
    AutomationChanges.Default,
    AutomationsRepo.Default,
    BucketsRepo.Default,
    EventBus.Default,
    Events.Default,
    EventsRepo.Default
  ]
}) {}

/** A child firing read back from its JSON: its dates as Dates again. */
const reviveFiring = (json: any): Firing => ({
  ...json,
  triggered: new Date(json.triggered),
  triggering_event: json.triggering_event
    ? { ...json.triggering_event, occurred: new Date(json.triggering_event.occurred), received: new Date(json.triggering_event.received) }
    : null,
  triggering_firings: (json.triggering_firings ?? []).map(reviveFiring)
})

/** The triggers service's loops, and the loop that performs the actions they trigger. */
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
)
