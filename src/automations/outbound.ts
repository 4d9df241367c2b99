/**
 * The server's outgoing HTTP calls for automations: webhook blocks (call-webhook) and notification
 * blocks (send-notification).
 *
 * Every call is bounded, since the URL and the server answering it are the user's: redirects are not
 * followed (a 3xx is the answer), connecting and the whole call each have a deadline, and at most a
 * few KB of the answer are read before the connection is closed. The URL is never repeated (it often
 * is the secret: a Slack or Discord webhook, credentials in its user info): failures name only its
 * scheme, host and port, and the parts of the answer that are kept have its user info, path and query
 * replaced by "********".
 */
import { Data, Effect } from "effect"
import * as http from "node:http"
import * as https from "node:https"
import { isObject } from "../domain/schemas.ts"

/** Why an action could not be carried out; recorded in its `prefect.automation.action.failed` event. */
export class ActionFailed extends Data.TaggedError("ActionFailed")<{ readonly reason: string }> {}

export const actionFailed = (reason: string): ActionFailed => new ActionFailed({ reason })

/** Why an outgoing call got no answer, told without the secret parts of its URL. */
export class CallFailed extends Data.TaggedError("CallFailed")<{ readonly description: string }> {}

export interface OutboundResponse {
  readonly status_code: number
  readonly response_body: string
  readonly response_headers: Record<string, string>
}

/** The deadlines of an outgoing call, in milliseconds (the `server.events.action_*` settings). */
export interface OutboundLimits {
  readonly connectMs: number
  readonly totalMs: number
  /** The most a block's own timeout may give the whole call. */
  readonly maxTotalMs: number
}

/** Characters of the answer kept in the action's event (as the reference keeps). */
export const RESPONSE_BODY_CHARACTERS = 1000

/** Bytes of the answer read at most: enough for the characters kept, at up to 4 bytes each. */
export const RESPONSE_READ_BYTES = 4 * RESPONSE_BODY_CHARACTERS + 96

const REDACTED_HEADERS = /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|x-auth-token)$/i

const SECRET = "********"

/** The scheme, host and port of a URL: all a failure reason says about where a call went. */
const originOf = (url: URL) => `${url.protocol}//${url.host}`

const decoded = (text: string) => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * Replaces the secret parts of `url` (user, password, path, query, the whole URL), raw or
 * percent-decoded, wherever the answer repeats them (an echoed path, a Location header). Parts of
 * fewer than 4 characters are left alone: replacing "/" or "a" would garble every answer.
 */
const scrubberFor = (url: URL) => {
  const parts = [url.href, url.username, url.password, url.pathname + url.search, url.pathname, url.search]
    .flatMap((part) => [part, decoded(part)])
    .filter((part, i, all) => part.length >= 4 && part !== "/" && all.indexOf(part) === i)
    .sort((a, b) => b.length - a.length)
  // split/join rather than a regular expression: the parts are the user's text.
  return (text: string) => parts.reduce((acc, part) => acc.split(part).join(SECRET), text)
}

/** Text PostgreSQL can store in a jsonb event payload: no NUL, no unpaired surrogate. */
const storable = (text: string) =>
  text.replace(/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD")

/** The first `length` characters (a surrogate pair is not split), with "..." when there was more. */
const truncated = (text: string, length: number) => {
  if (text.length <= length) return text
  const end = /[\uD800-\uDBFF]/.test(text[length - 1]!) ? length - 1 : length
  return `${text.slice(0, end)}...`
}

const TLS_ERROR = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|UNABLE_TO_|HOSTNAME_MISMATCH)/

/** A failure of the request as a sentence naming only the origin; the error's own message may hold the URL. */
const describe = (error: unknown, target: string): string => {
  const code = isObject(error) && typeof error.code === "string" ? error.code : ""
  if (code === "ECONNREFUSED") return `connection refused by ${target}`
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EAI_NONAME") return `the host of ${target} could not be found`
  if (code === "ECONNRESET" || code === "EPIPE") return `the connection to ${target} was closed before the answer was complete`
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH") return `${target} cannot be reached`
  if (code === "ERR_INVALID_CHAR" || code === "ERR_INVALID_HTTP_TOKEN" || code === "ERR_HTTP_INVALID_HEADER_VALUE") {
    return "the request's method or a header is not valid HTTP"
  }
  if (code.startsWith("HPE_")) return `the answer from ${target} is not valid HTTP (${code})`
  if (TLS_ERROR.test(code)) return `the TLS connection to ${target} failed (${code})`
  return `the request to ${target} failed${/^[A-Z][A-Z0-9_]*$/.test(code) ? ` (${code})` : ""}`
}

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(3))} seconds`

export interface OutgoingCall {
  readonly url: string
  readonly method: string
  readonly headers?: Record<string, string>
  readonly body?: string
  /** The whole call's deadline when the block sets its own (a custom webhook's `timeout`), in seconds. */
  readonly timeoutSeconds?: number
  /** Check the server's TLS certificate (a webhook block's `verify`). */
  readonly verify?: boolean
}

/**
 * One HTTP request. Redirects are not followed; the call fails when it cannot connect within
 * `connectMs` or does not end within its total deadline; at most RESPONSE_READ_BYTES of the answer
 * are read, then the connection is closed.
 */
export const send = (call: OutgoingCall, limits: OutboundLimits): Effect.Effect<OutboundResponse, CallFailed> =>
  Effect.suspend(() => {
    let url: URL
    try {
      url = new URL(call.url)
    } catch {
      return Effect.fail(new CallFailed({ description: "the URL is not a valid URL" }))
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return Effect.fail(new CallFailed({ description: "the URL's scheme is not http or https" }))
    }
    const target = originOf(url)
    const scrub = scrubberFor(url)
    const own = call.timeoutSeconds
    const totalMs = own !== undefined && Number.isFinite(own) && own > 0 ? Math.min(own * 1000, limits.maxTotalMs) : limits.totalMs
    const headers: Record<string, string> = { "user-agent": "Baton", ...call.headers }
    const body = call.body !== undefined && call.method.toUpperCase() !== "GET" ? Buffer.from(call.body, "utf8") : undefined
    if (body !== undefined) {
      for (const name of Object.keys(headers)) if (/^(content-length|transfer-encoding)$/i.test(name)) delete headers[name]
      headers["content-length"] = String(body.length)
    }

    return Effect.async<OutboundResponse, CallFailed>((resume) => {
      let settled = false
      let phase: "connecting" | "waiting" | "reading" = "connecting"
      let request: http.ClientRequest | undefined
      const timers: Array<ReturnType<typeof setTimeout>> = []
      const stop = () => {
        settled = true
        for (const timer of timers) clearTimeout(timer)
        request?.destroy()
      }
      const fail = (description: string) => {
        if (settled) return
        stop()
        resume(Effect.fail(new CallFailed({ description })))
      }
      const expired = (ms: number) =>
        fail(
          phase === "connecting"
            ? `could not connect to ${target} within ${seconds(ms)}`
            : phase === "waiting"
            ? `no answer from ${target} within ${seconds(ms)}`
            : `the answer from ${target} did not end within ${seconds(ms)}`
        )
      timers.push(setTimeout(() => expired(totalMs), totalMs))
      if (limits.connectMs < totalMs) timers.push(setTimeout(() => phase === "connecting" && expired(limits.connectMs), limits.connectMs))

      try {
        // A fresh connection, closed after the call (agent: false): never a pooled socket left half-read.
        request = (url.protocol === "https:" ? https : http).request(url, {
          method: call.method,
          headers,
          agent: false,
          ...(url.protocol === "https:" ? { rejectUnauthorized: call.verify !== false } : {})
        })
      } catch (error) {
        fail(describe(error, target))
        return
      }
      request.on("error", (error) => fail(describe(error, target)))
      request.on("socket", (socket) => {
        const connected = () => {
          if (phase === "connecting") phase = "waiting"
        }
        if (url.protocol === "https:") socket.once("secureConnect", connected)
        else if (socket.connecting) socket.once("connect", connected)
        else connected()
      })
      request.on("response", (response) => {
        phase = "reading"
        const chunks: Array<Buffer> = []
        let size = 0
        const done = () => {
          if (settled) return
          stop()
          const text = storable(scrub(new TextDecoder("utf-8").decode(Buffer.concat(chunks))))
          const responseHeaders: Record<string, string> = {}
          for (const [name, value] of Object.entries(response.headers)) {
            if (value === undefined || REDACTED_HEADERS.test(name)) continue
            responseHeaders[name] = storable(scrub(Array.isArray(value) ? value.join(", ") : value))
          }
          resume(
            Effect.succeed({
              status_code: response.statusCode ?? 0,
              response_body: truncated(text, RESPONSE_BODY_CHARACTERS),
              response_headers: responseHeaders
            })
          )
        }
        response.on("data", (chunk: Buffer) => {
          if (settled) return
          const room = RESPONSE_READ_BYTES - size
          chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk)
          size += Math.min(chunk.length, room)
          // Enough for what is kept: the rest is never read (stop() closes the connection).
          if (size >= RESPONSE_READ_BYTES) done()
        })
        response.on("end", done)
        response.on("error", (error) => fail(describe(error, target)))
        response.on("aborted", () => fail(`the connection to ${target} was closed before the answer was complete`))
      })
      request.end(body)
      return Effect.sync(stop)
    })
  })

const text = (value: unknown) => (typeof value === "string" ? value : "")
const stringRecord = (value: unknown): Record<string, string> =>
  isObject(value) ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, String(v)])) : {}

/** Calls a webhook block (`url`, `method`, `headers`, `verify`) with the rendered payload as the body. */
export const callWebhook = (data: Record<string, unknown>, payload: string, limits: OutboundLimits) => {
  const url = text(data.url)
  if (url === "") return Effect.fail(actionFailed("The webhook block has no URL"))
  const headers = stringRecord(data.headers)
  if (payload !== "" && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) {
    headers["content-type"] = isJson(payload) ? "application/json" : "text/plain"
  }
  return send({ url, method: text(data.method) || "POST", headers, body: payload, verify: data.verify !== false }, limits).pipe(
    Effect.mapError((failed) => actionFailed(`Webhook call failed: ${failed.description}`))
  )
}

const isJson = (value: string) => {
  try {
    JSON.parse(value)
    return true
  } catch {
    return false
  }
}

/** Characters a custom webhook's filled URL, headers and body may come to in all. */
export const FILLED_REQUEST_CHARACTERS = 4 * 1024 * 1024

class FilledTooLarge extends Error {}

/**
 * A filler of `{{key}}` placeholders in every nested string from `values`, within one budget of
 * FILLED_REQUEST_CHARACTERS: a block with many `{{body}}` placeholders would otherwise multiply the
 * (already bounded) body into a request of gigabytes. Past the budget it throws FilledTooLarge.
 */
const filler = (values: Record<string, string>) => {
  let made = 0
  const fill = (value: unknown): unknown => {
    if (typeof value === "string") {
      made += value.length
      if (made > FILLED_REQUEST_CHARACTERS) throw new FilledTooLarge()
      return value.replace(/\{\{\s*([\w.-]+)\s*\}\}/g, (match, key: string) => {
        const filled = values[key] ?? match
        made += filled.length - match.length
        if (made > FILLED_REQUEST_CHARACTERS) throw new FilledTooLarge()
        return filled
      })
    }
    if (Array.isArray(value)) return value.map(fill)
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]))
    return value
  }
  return fill
}

/**
 * Sends a notification through a notification block of the given type. A call that got no answer
 * fails with CallFailed (the action records it as its notification log); an unsupported block type
 * with ActionFailed.
 */
export const notify = (
  blockType: string,
  data: Record<string, unknown>,
  subject: string,
  body: string,
  limits: OutboundLimits
): Effect.Effect<OutboundResponse, CallFailed | ActionFailed> => {
  const postJson = (url: string, json: unknown) =>
    send({ url, method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(json) }, limits)
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
      const call = customWebhookCall(data, subject, body)
      return call === undefined
        ? Effect.fail(actionFailed(`The custom webhook's request would be larger than ${FILLED_REQUEST_CHARACTERS} characters`))
        : send(call, limits)
    }
    default:
      return Effect.fail(actionFailed(`Notifications through ${blockType} blocks are not supported by this server`))
  }
}

/** A custom webhook block's request, its placeholders filled; undefined when it would be too large. */
const customWebhookCall = (data: Record<string, unknown>, subject: string, body: string): OutgoingCall | undefined => {
  const fill = filler({ subject, body, name: text(data.name), ...stringRecord(data.secrets) })
  try {
    const query = new URLSearchParams(stringRecord(fill(data.params ?? {})))
    const url = `${String(fill(text(data.url)))}${[...query].length > 0 ? `?${query}` : ""}`
    const headers = stringRecord(fill(data.headers ?? {}))
    const json = data.json_data ?? null
    const form = data.form_data ?? null
    const requestBody =
      json !== null
        ? JSON.stringify(fill(json))
        : typeof form === "string"
        ? String(fill(form))
        : isObject(form)
        ? new URLSearchParams(stringRecord(fill(form))).toString()
        : undefined
    if (json !== null) headers["content-type"] ??= "application/json"
    else if (isObject(form)) headers["content-type"] ??= "application/x-www-form-urlencoded"
    return {
      url,
      method: text(data.method) || "POST",
      headers,
      ...(requestBody !== undefined ? { body: requestBody } : {}),
      ...(typeof data.timeout === "number" ? { timeoutSeconds: data.timeout } : {})
    }
  } catch (error) {
    if (error instanceof FilledTooLarge) return undefined
    throw error
  }
}
