/**
 * The server's outgoing HTTP calls for automations: webhook blocks (call-webhook) and notification
 * blocks (send-notification). Every call has a timeout; the response (status, truncated body, headers
 * without credentials) is kept for the action's event.
 */
import { Data, Effect } from "effect"
import { isObject } from "../domain/schemas.ts"

/** Why an action could not be carried out; recorded in its `prefect.automation.action.failed` event. */
export class ActionFailed extends Data.TaggedError("ActionFailed")<{ readonly reason: string }> {}

export const actionFailed = (reason: string): ActionFailed => new ActionFailed({ reason })

export interface OutboundResponse {
  readonly status_code: number
  readonly response_body: string
  readonly response_headers: Record<string, string>
}

/** Default seconds an outgoing call may take. */
export const OUTBOUND_TIMEOUT_SECONDS = 10

const REDACTED_HEADERS = /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|x-auth-token)$/i

const truncated = (text: string, length: number) => (text.length > length ? `${text.slice(0, length)}...` : text)

/** One HTTP request; a network failure or timeout is an ActionFailed. */
export const send = (request: {
  readonly url: string
  readonly method: string
  readonly headers?: Record<string, string>
  readonly body?: string
  readonly timeoutSeconds?: number
}) =>
  Effect.tryPromise({
    try: async (): Promise<OutboundResponse> => {
      const response = await fetch(request.url, {
        method: request.method,
        headers: request.headers ?? {},
        ...(request.body !== undefined && request.method !== "GET" ? { body: request.body } : {}),
        signal: AbortSignal.timeout((request.timeoutSeconds ?? OUTBOUND_TIMEOUT_SECONDS) * 1000)
      })
      const text = await response.text()
      const headers: Record<string, string> = {}
      response.headers.forEach((value, key) => {
        if (!REDACTED_HEADERS.test(key)) headers[key] = value
      })
      return { status_code: response.status, response_body: truncated(text, 1000), response_headers: headers }
    },
    catch: (error) => actionFailed(`Webhook call failed: ${(error as Error).name === "TimeoutError" ? "timed out" : String((error as Error).message ?? error)}`)
  })

const text = (value: unknown) => (typeof value === "string" ? value : "")
const stringRecord = (value: unknown): Record<string, string> =>
  isObject(value) ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, String(v)])) : {}

/** Calls a webhook block (`url`, `method`, `headers`) with the rendered payload as the body. */
export const callWebhook = (data: Record<string, unknown>, payload: string) => {
  const url = text(data.url)
  if (url === "") return Effect.fail(actionFailed("The webhook block has no URL"))
  const headers = stringRecord(data.headers)
  if (payload !== "" && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) {
    headers["content-type"] = isJson(payload) ? "application/json" : "text/plain"
  }
  return send({ url, method: text(data.method) || "POST", headers, body: payload })
}

const isJson = (value: string) => {
  try {
    JSON.parse(value)
    return true
  } catch {
    return false
  }
}

/** Fills `{{key}}` placeholders in every nested string from `values`. */
const fill = (value: unknown, values: Record<string, string>): unknown => {
  if (typeof value === "string") return value.replace(/\{\{\s*([\w.-]+)\s*\}\}/g, (match, key: string) => values[key] ?? match)
  if (Array.isArray(value)) return value.map((v) => fill(v, values))
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, values)]))
  return value
}

const postJson = (url: string, body: unknown) =>
  send({ url, method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })

/** Sends a notification through a notification block of the given type. */
export const notify = (blockType: string, data: Record<string, unknown>, subject: string, body: string) => {
  switch (blockType) {
    case "slack-webhook":
      return postJson(text(data.url), { text: `${subject}\n${body}` })
    case "ms-teams-webhook":
      return postJson(text(data.url), { title: subject, text: body })
    case "mattermost-webhook":
      return postJson(`${text(data.hostname).startsWith("http") ? "" : "https://"}${text(data.hostname)}/hooks/${text(data.token)}`, {
        text: `${subject}\n${body}`
      })
    case "discord-webhook":
      return postJson(`https://discord.com/api/webhooks/${text(data.webhook_id)}/${text(data.webhook_token)}`, {
        content: `${subject}\n${body}`
      })
    case "custom-webhook": {
      const values = { subject, body, name: text(data.name), ...stringRecord(data.secrets) }
      const query = new URLSearchParams(stringRecord(fill(data.params ?? {}, values)))
      const url = `${text(data.url)}${[...query].length > 0 ? `?${query}` : ""}`
      const headers = stringRecord(fill(data.headers ?? {}, values))
      const json = data.json_data ?? null
      const form = data.form_data ?? null
      const requestBody =
        json !== null
          ? JSON.stringify(fill(json, values))
          : typeof form === "string"
          ? String(fill(form, values))
          : isObject(form)
          ? new URLSearchParams(stringRecord(fill(form, values))).toString()
          : undefined
      if (json !== null) headers["content-type"] ??= "application/json"
      else if (isObject(form)) headers["content-type"] ??= "application/x-www-form-urlencoded"
      return send({
        url,
        method: text(data.method) || "POST",
        headers,
        ...(requestBody !== undefined ? { body: requestBody } : {}),
        timeoutSeconds: typeof data.timeout === "number" ? data.timeout : OUTBOUND_TIMEOUT_SECONDS
      })
    }
    default:
      return Effect.fail(actionFailed(`Notifications through ${blockType} blocks are not supported by this server`))
  }
}
