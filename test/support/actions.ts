/** Driving automation actions directly, as the triggers service queues them, and reading their events back. */
import { expect } from "@effect/vitest"
import { Clock, Effect, Option, Schema } from "effect"
import { AutomationActions } from "../../src/automations/actions.ts"
import type { TriggeredAction } from "../../src/automations/firing.ts"
import { AutomationsRepo } from "../../src/automations/repo.ts"
import { ActionSchema } from "../../src/automations/schemas.ts"
import { EventPersister } from "../../src/events/persister.ts"
import { Automation } from "../../src/automations/schemas.ts"
import { BlockDocument } from "../../src/blocks/documents-schemas.ts"
import { BlockSchema, BlockType } from "../../src/blocks/schemas.ts"
import type { ReceivedEvent } from "../../src/events/schemas.ts"
import { ok, okAs } from "./api.ts"
import { type Json, request } from "./server.ts"

const decodeAction = Schema.decodeUnknownSync(ActionSchema)
let counter = 0
const uuid = (prefix: string) => `${prefix}-0000-4000-8000-${String(++counter).padStart(12, "0")}`

/** A received event about `resource`, related to `related`. */
export const eventAbout = (resource: string, related: Array<Record<string, string>> = [], name = "test.happened"): ReceivedEvent => ({
  id: uuid("00000000"),
  occurred: new Date(Date.UTC(2026, 5, 1)),
  received: new Date(Date.UTC(2026, 5, 1)),
  event: name,
  resource: { "prefect.resource.id": resource, "prefect.resource.name": "the resource" },
  related,
  payload: {},
  follows: null
})

/** Performs one action of a stored automation (as the triggers service would queue it); its action events. */
export const perform = (
  automationId: string,
  action: Record<string, unknown>,
  event: ReceivedEvent | null = eventAbout("x"),
  labels: Record<string, string> = {}
) =>
  Effect.gen(function* () {
    const automation = Option.getOrThrow(yield* (yield* AutomationsRepo).find(automationId))
    const at = new Date(yield* Clock.currentTimeMillis)
    const ta: TriggeredAction = {
      id: uuid("11111111"),
      automation,
      firing: { id: uuid("22222222"), trigger: automation.trigger, trigger_states: ["Triggered"], triggered: at, triggering_labels: labels, triggering_firings: [], triggering_event: event },
      triggered: at,
      triggering_labels: labels,
      triggering_event: event,
      action: decodeAction(action),
      action_index: 0,
      automation_triggered_event_id: null
    }
    yield* (yield* AutomationActions).perform(ta)
    yield* Effect.flatMap(EventPersister, (p) => p.drain)
    const res = yield* request("POST", "/events/filter", {
      body: {
        filter: {
          event: { prefix: ["prefect.automation.action."] },
          related: { id: [`prefect.event.${event?.id ?? "none"}`] },
          resource: { id: [`prefect.automation.${automationId}`] },
          occurred: { since: "1970-01-01T00:00:00Z" }
        }
      }
    })
    return ok(res, 200).events
  })

/** The action's outcome event: executed or failed. */
export const outcome = (events: Json) => {
  expect(events.map((e) => e.event)).toContain("prefect.automation.action.triggered")
  return events.find((e) => e.event !== "prefect.automation.action.triggered")!
}

/** An automation that never fires by itself, to perform actions for. */
export const anAutomation = (name: string) =>
  Effect.map(
    request("POST", "/automations/", { body: { name, trigger: { posture: "Reactive", expect: ["never"] }, actions: [{ type: "do-nothing" }] } }),
    (res) => okAs(Automation, res, 201)
  )

/** A block document of a system block type. */
export const blockDocument = (slug: string, name: string, data: Record<string, unknown>) =>
  Effect.gen(function* () {
    ok(yield* request("POST", "/block_types/install_system_block_types"), 200)
    const type = okAs(BlockType, yield* request("GET", `/block_types/slug/${slug}`), 200)
    const [schema] = okAs(Schema.Array(BlockSchema), yield* request("POST", "/block_schemas/filter", { body: { block_schemas: { block_type_id: { any_: [type.id] } } } }), 200)
    return okAs(BlockDocument, yield* request("POST", "/block_documents/", { body: { name, block_type_id: type.id, block_schema_id: schema!.id, data } }), 201)
  })

/** Every event of an automation, read page by page: POST /events/filter, then GET /events/filter/next. */
export const eventsOfAutomation = (automationId: string) =>
  Effect.gen(function* () {
    const filter = { resource: { id: [`prefect.automation.${automationId}`] }, occurred: { since: "1970-01-01T00:00:00Z" } }
    let page = ok(yield* request("POST", "/events/filter", { body: { filter, limit: 10 } }), 200)
    const events = [...page.events]
    while (page.next_page !== null) {
      page = ok(yield* request("GET", `/events/filter/next${new URL(page.next_page as string).search}`), 200)
      events.push(...page.events)
    }
    return events
  })
