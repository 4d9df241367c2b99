/**
 * The automations the triggers engine evaluates, indexed: every trigger of an enabled automation by
 * id (with the composite around it), and its event triggers by the event names they name. Loaded
 * once, and reloaded when they change: at once for changes announced to the engine, and by
 * comparing the automations' snapshot (newest update, count) for changes made by other replicas.
 */
import { Effect } from "effect"
import type { AutomationChange } from "./changes.ts"
import { type AutomationsSnapshot, AutomationsRepo } from "./repo.ts"
import type { Automation, CompositeTrigger, EventTrigger, Trigger } from "./schemas.ts"

/** A loaded trigger: the automation it belongs to and the composite trigger around it, if any. */
export interface Loaded {
  readonly automation: Automation
  readonly parent: CompositeTrigger | undefined
}

/** The trigger and every trigger inside it, parents first. */
export const allTriggers = (trigger: Trigger): Array<Trigger> =>
  trigger.type === "event" ? [trigger] : [trigger, ...trigger.triggers.flatMap(allTriggers)]

export const eventTriggers = (trigger: Trigger): Array<EventTrigger> =>
  allTriggers(trigger).filter((t): t is EventTrigger => t.type === "event")

const parentsOf = (trigger: Trigger, parent: CompositeTrigger | undefined, into: Map<string, CompositeTrigger | undefined>) => {
  into.set(trigger.id, parent)
  if (trigger.type !== "event") for (const child of trigger.triggers) parentsOf(child, trigger, into)
  return into
}

export const makeTriggerIndex = Effect.gen(function* () {
  const automationsRepo = yield* AutomationsRepo

  const automations = new Map<string, Automation>()
  /** Every trigger of a loaded automation (composites too), by id. */
  const loaded = new Map<string, Loaded>()
  const eventTriggersById = new Map<string, EventTrigger>()
  /** When each proactive trigger is evaluated next (epoch milliseconds). */
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

  let started = false
  /** Loads every automation the first time it is called. */
  const ensureStarted = Effect.gen(function* () {
    if (started) return
    yield* reconcile(true)
    started = true
  })

  return {
    loaded: loaded as ReadonlyMap<string, Loaded>,
    eventTriggers: eventTriggersById as ReadonlyMap<string, EventTrigger>,
    nextProactiveRun,
    candidates,
    reconcile,
    applyChanges,
    ensureStarted,
    isStarted: () => started
  } as const
})

export type TriggerIndex = Effect.Effect.Success<typeof makeTriggerIndex>
