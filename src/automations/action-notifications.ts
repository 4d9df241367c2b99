/** The actions that call out through a block: call a webhook, send a notification. */
import { Effect, Option } from "effect"
import { BlockDocuments } from "../blocks/documents-service.ts"
import { type Perform, type Performers, statusReason } from "./action-performer.ts"
import type { ActionTemplates } from "./action-templates.ts"
import type { TriggeredAction } from "./firing.ts"
import { actionFailed, callWebhook, notify, type OutboundLimits, type OutboundResponse } from "./outbound.ts"
import { Settings } from "../settings/settings.ts"

export const makeNotificationActions = (templates: ActionTemplates) =>
  Effect.gen(function* () {
    const blocks = yield* BlockDocuments
    const settings = yield* Settings
    const eventSettings = settings.server.events
    const limits: OutboundLimits = {
      connectMs: eventSettings.action_connect_timeout_seconds * 1000,
      totalMs: eventSettings.action_timeout_seconds * 1000,
      maxTotalMs: eventSettings.action_max_timeout_seconds * 1000
    }

    const blockDocument = (ta: TriggeredAction, id: string, related: Array<Record<string, string>>, details: Record<string, unknown>) =>
      Effect.gen(function* () {
        const found = yield* blocks.find(id, true)
        if (Option.isNone(found)) {
          details.status_code = 404
          return yield* actionFailed(statusReason(ta.action.type, 404))
        }
        const document = found.value
        related.push(
          { "prefect.resource.id": `prefect.block-document.${id}`, "prefect.resource.role": "block", "prefect.resource.name": document.name ?? "" },
          { "prefect.resource.id": `prefect.block-type.${document.block_type?.slug ?? ""}`, "prefect.resource.role": "block-type" }
        )
        return document
      })

    const keepResponse = (details: Record<string, unknown>) => (response: OutboundResponse) => Effect.sync(() => Object.assign(details, response))

    const webhook: Perform<"call-webhook"> = (ta, action, related, details) =>
      Effect.gen(function* () {
        const document = yield* blockDocument(ta, action.block_document_id, related, details)
        if (document.block_type?.slug !== "webhook") return yield* actionFailed("The referenced block was not a webhook block")
        const [payload] = yield* templates.render([action.payload], ta, details)
        yield* Effect.flatMap(callWebhook(document.data, payload!, limits), keepResponse(details))
      })

    const notification: Perform<"send-notification"> = (ta, action, related, details) =>
      Effect.gen(function* () {
        const document = yield* blockDocument(ta, action.block_document_id, related, details)
        if (!(document.block_schema?.capabilities ?? []).includes("notify")) {
          return yield* actionFailed("The referenced block was not a notification block")
        }
        const [subject, body] = yield* templates.render([action.subject, action.body], ta, details)
        const response = yield* notify(document.block_type?.slug ?? "", document.data, subject!, body!, limits).pipe(
          Effect.catchTag("CallFailed", (failed) => {
            // As the reference: the reason stays "Notification failed", what happened is the log.
            details.notification_log = failed.description
            return Effect.fail(actionFailed("Notification failed"))
          })
        )
        if (response.status_code >= 300) {
          details.notification_log = response.response_body
          return yield* actionFailed("Notification failed")
        }
      })

    return { "call-webhook": webhook, "send-notification": notification } satisfies Performers<"call-webhook" | "send-notification">
  })
