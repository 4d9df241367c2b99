/**
 * The outgoing requests of call-webhook and send-notification against servers that answer badly:
 * redirects are recorded, not followed; silence, a trickled body and a blackholed address end at
 * their deadlines; an endless body is not read; and a URL that is a secret never shows.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Logger, TestClock } from "effect"
import { randomUUID } from "node:crypto"
import { FILLED_REQUEST_CHARACTERS, RESPONSE_BODY_CHARACTERS } from "../../src/automations/outbound.ts"
import { Automation } from "../../src/automations/schemas.ts"
import { runBackgroundServices } from "../../src/services/registry.ts"
import { anAutomation, blockDocument, eventsOfAutomation, outcome, perform } from "../support/actions.ts"
import { okAs } from "../support/api.ts"
import { stillServing, timed } from "../support/timing.ts"
import { eventually } from "../support/eventually.ts"
import {
  blackhole,
  echoingServer,
  hugeBodyServer,
  redirectingServer,
  refusingPort,
  selfSignedHttpsServer,
  silentServer,
  tricklingServer
} from "../support/hostile-http.ts"
import { receiver } from "../support/receiver.ts"
import { buildInServer, request, testServer } from "../support/server.ts"

const LIMITS = {
  "server.events.action_connect_timeout_seconds": 0.5,
  "server.events.action_timeout_seconds": 1,
  "server.events.action_max_timeout_seconds": 2
}

/** Log lines written while `effect` runs. */
const capturingLogs = <A, E, R>(effect: Effect.Effect<A, E, R>, lines: Array<string>) =>
  effect.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, Logger.make(({ logLevel, message }) => void lines.push(`${logLevel.label} ${JSON.stringify(message)}`)))))

// The secret parts of a webhook URL: its user info, its path and its query.
const SECRETS = ["hook-user-7f3a", "pa55word-c9d1", "secret-path-5b2e", "tok-e8a4", "mm-token-31c7", "custom-secret-90ab"]
const secretUrl = (origin: string) => origin.replace("http://", "http://hook-user-7f3a:pa55word-c9d1@") + "/hooks/secret-path-5b2e?token=tok-e8a4"
const expectNoSecret = (what: string, text: string) => {
  for (const secret of SECRETS) expect(text, `${what} shows ${secret}`).not.toContain(secret)
}

describe("outgoing requests of automation actions", () => {
  it.layer(testServer({ overrides: LIMITS }), { timeout: 60_000 })((it) => {
    it.effect("a redirect is the answer recorded, never followed", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const automation = yield* anAutomation("redirected")
          const elsewhere = yield* echoingServer()
          const redirecting = yield* redirectingServer(`${elsewhere.url}/elsewhere`)

          const webhook = yield* blockDocument("webhook", "redirecting-hook", { url: `${redirecting.url}/hook` })
          const called = outcome(yield* perform(automation.id, { type: "call-webhook", block_document_id: webhook.id, payload: "{}" }))
          expect(called.event, JSON.stringify(called.payload)).toBe("prefect.automation.action.executed")
          expect(called.payload).toMatchObject({ status_code: 302, response_headers: { location: `${elsewhere.url}/elsewhere` } })

          const slack = yield* blockDocument("slack-webhook", "redirecting-slack", { url: `${redirecting.url}/slack` })
          const notified = outcome(yield* perform(automation.id, { type: "send-notification", block_document_id: slack.id, body: "hello" }))
          expect(notified.event).toBe("prefect.automation.action.failed")
          expect(notified.payload).toMatchObject({ reason: "Notification failed", notification_log: expect.stringContaining("Redirecting to") })

          expect(elsewhere.requests).toHaveLength(0)
        })
      ))

    it.effect("silence and a trickled answer end at the total deadline, a blackholed address at the connect deadline; a block's own timeout is capped", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const automation = yield* anAutomation("deadlines")
          const silent = yield* silentServer()
          const trickling = yield* tricklingServer(20)
          const hole = yield* blackhole()
          const callWebhook = (name: string, url: string) =>
            Effect.flatMap(blockDocument("webhook", name, { url }), (webhook) =>
              timed(Effect.map(perform(automation.id, { type: "call-webhook", block_document_id: webhook.id, payload: "{}" }), outcome))
            )

          // A custom webhook's own timeout shortens the deadline, and lengthens it only up to the cap (2 s here).
          const custom = (name: string, timeout: number) =>
            Effect.flatMap(blockDocument("custom-webhook", name, { name, url: `${silent.url}/notify`, json_data: { text: "{{body}}" }, timeout }), (block) =>
              timed(Effect.map(perform(automation.id, { type: "send-notification", block_document_id: block.id, body: "hello" }), outcome))
            )
          // Each call waits out its own deadline: they wait side by side.
          const [hung, trickled, unreachable, short, capped] = yield* Effect.all([
            callWebhook("silent-hook", `${silent.url}/hook`),
            callWebhook("trickling-hook", `${trickling.url}/hook`),
            callWebhook("blackholed-hook", `${hole.url}/hook`),
            custom("impatient", 0.3),
            custom("patient", 1000)
          ], { concurrency: "unbounded" })

          expect(hung.value.payload.reason).toBe(`Webhook call failed: no answer from ${silent.url} within 1 seconds`)
          expect(hung.ms).toBeGreaterThan(900)
          expect(hung.ms).toBeLessThan(2500)

          expect(trickled.value.payload.reason).toBe(`Webhook call failed: the answer from ${trickling.url} did not end within 1 seconds`)
          expect(trickled.ms).toBeLessThan(2500)

          expect(unreachable.value.payload.reason).toBe(`Webhook call failed: could not connect to ${hole.url} within 0.5 seconds`)
          expect(unreachable.ms).toBeGreaterThan(450)
          expect(unreachable.ms).toBeLessThan(2000)

          expect(short.value.payload).toMatchObject({ reason: "Notification failed", notification_log: `no answer from ${silent.url} within 0.3 seconds` })
          expect(short.ms).toBeLessThan(1000)
          expect(capped.value.payload.notification_log).toBe(`no answer from ${silent.url} within 2 seconds`)
          expect(capped.ms).toBeLessThan(3500)

          yield* stillServing
        })
      ))

    it.effect("HTTPS: a certificate that does not verify fails the call unless the webhook block turns verify off; a TLS handshake never answered ends at the connect deadline", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const automation = yield* anAutomation("tls")
          const secure = yield* selfSignedHttpsServer()
          const silent = yield* silentServer()
          const callWebhook = (name: string, data: Record<string, unknown>) =>
            Effect.flatMap(blockDocument("webhook", name, data), (webhook) =>
              timed(Effect.map(perform(automation.id, { type: "call-webhook", block_document_id: webhook.id, payload: "{}" }), outcome))
            )

          const checked = yield* callWebhook("checked-tls", { url: `${secure.url}/hook` })
          expect(checked.value.payload.reason).toBe(`Webhook call failed: the TLS connection to ${secure.url} failed (DEPTH_ZERO_SELF_SIGNED_CERT)`)
          const unchecked = yield* callWebhook("unchecked-tls", { url: `${secure.url}/hook`, verify: false })
          expect(unchecked.value.event, JSON.stringify(unchecked.value.payload)).toBe("prefect.automation.action.executed")
          expect(unchecked.value.payload).toMatchObject({ status_code: 200, response_body: "secure" })

          const handshake = yield* callWebhook("silent-tls", { url: `https://127.0.0.1:${silent.port}/hook` })
          expect(handshake.value.payload.reason).toBe(`Webhook call failed: could not connect to https://127.0.0.1:${silent.port} within 0.5 seconds`)
          expect(handshake.ms).toBeLessThan(1500)
        })
      ))

    it.effect("a 400 MB answer is not read: the action ends at once, with the first 1000 characters, and memory stays flat", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const automation = yield* anAutomation("huge answer")
          const huge = yield* hugeBodyServer(400 * 1024 * 1024)
          const webhook = yield* blockDocument("webhook", "huge-hook", { url: `${huge.url}/hook` })

          const before = process.memoryUsage()
          const peak = { rss: before.rss, arrayBuffers: before.arrayBuffers }
          const sampler = setInterval(() => {
            const now = process.memoryUsage()
            peak.rss = Math.max(peak.rss, now.rss)
            peak.arrayBuffers = Math.max(peak.arrayBuffers, now.arrayBuffers)
          }, 5)
          const called = yield* timed(Effect.map(perform(automation.id, { type: "call-webhook", block_document_id: webhook.id, payload: "{}" }), outcome)).pipe(
            Effect.ensuring(Effect.sync(() => clearInterval(sampler)))
          )

          expect(called.value.event, JSON.stringify(called.value.payload)).toBe("prefect.automation.action.executed")
          expect(called.value.payload.status_code).toBe(200)
          expect(called.value.payload.response_body).toBe(`${"a".repeat(RESPONSE_BODY_CHARACTERS)}...`)
          expect(called.ms).toBeLessThan(1000)
          // The connection was closed after the first few KB: the server could not send more than its socket buffers hold.
          yield* eventually(Effect.sync(() => expect(huge.sent.bytes).toBeLessThan(32 * 1024 * 1024)))
          expect(peak.arrayBuffers - before.arrayBuffers).toBeLessThan(32 * 1024 * 1024)
          expect(peak.rss - before.rss).toBeLessThan(100 * 1024 * 1024)
          yield* stillServing
        })
      ))

    it.effect("a custom webhook whose placeholders would multiply the body past the bound fails before anything is sent", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const automation = yield* anAutomation("multiplied")
          const echo = yield* echoingServer()
          // 1000 placeholders of a 10,000-character body would make a 10 MB request.
          const many = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, "{{body}}"]))
          const block = yield* blockDocument("custom-webhook", "multiplying", { name: "m", url: `${echo.url}/notify`, json_data: many })
          const sent = yield* timed(Effect.map(perform(automation.id, { type: "send-notification", block_document_id: block.id, body: "b".repeat(10_000) }), outcome))
          expect(sent.value.event).toBe("prefect.automation.action.failed")
          expect(sent.value.payload.reason).toBe(`The custom webhook's request would be larger than ${FILLED_REQUEST_CHARACTERS} characters`)
          expect(sent.ms).toBeLessThan(1000)
          expect(echo.requests).toHaveLength(0)
          // Within the bound the same block is sent.
          const small = yield* Effect.map(perform(automation.id, { type: "send-notification", block_document_id: block.id, body: "short" }), outcome)
          expect(small.event, JSON.stringify(small.payload)).toBe("prefect.automation.action.executed")
          expect(echo.requests.map((r) => r.url)).toEqual(["/notify"])
          yield* stillServing
        })
      ))

    it.effect("a URL from a secret shows in no event, failure reason or log line, on success or failure", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const lines: Array<string> = []
          const automation = yield* anAutomation("secret urls")
          const echo = yield* echoingServer(200)
          const failing = yield* echoingServer(500)
          const silent = yield* silentServer()
          const refusing = yield* refusingPort
          const act = (action: Record<string, unknown>) => capturingLogs(Effect.map(perform(automation.id, action), outcome), lines)
          const callWebhook = (name: string, url: string) =>
            Effect.flatMap(blockDocument("webhook", name, { url }), (webhook) => act({ type: "call-webhook", block_document_id: webhook.id, payload: "{}" }))
          const notify = (slug: string, name: string, data: Record<string, unknown>) =>
            Effect.flatMap(blockDocument(slug, name, data), (block) => act({ type: "send-notification", block_document_id: block.id, body: "hello" }))

          // Success: the secrets were sent, and the answer repeating them is recorded without them.
          const called = yield* callWebhook("echo-hook", secretUrl(echo.url))
          expect(called.event, JSON.stringify(called.payload)).toBe("prefect.automation.action.executed")
          expect(echo.requests[0]).toEqual({ url: "/hooks/secret-path-5b2e?token=tok-e8a4", authorization: "hook-user-7f3a:pa55word-c9d1" })
          expect(called.payload.status_code).toBe(200)
          expect(called.payload.response_body).toContain("You called ******** as ********:********")
          expect(called.payload.response_headers.location).toContain("********")

          // Failures: refused, timed out, an answer of 500, a URL that does not parse.
          const refused = yield* callWebhook("refused-hook", secretUrl(refusing.url))
          expect(refused.payload.reason).toBe(`Webhook call failed: connection refused by ${refusing.url}`)
          const timedOut = yield* callWebhook("silent-secret-hook", secretUrl(silent.url))
          expect(timedOut.payload.reason).toBe(`Webhook call failed: no answer from ${silent.url} within 1 seconds`)
          const invalid = yield* callWebhook("invalid-hook", secretUrl("http://127.0.0.1:99999"))
          expect(invalid.payload.reason).toBe("Webhook call failed: the URL is not a valid URL")

          const slack = yield* notify("slack-webhook", "failing-slack", { url: secretUrl(failing.url) })
          expect(slack.payload).toMatchObject({ reason: "Notification failed", notification_log: expect.stringContaining("You called ********") })
          const slackRefused = yield* notify("slack-webhook", "refused-slack", { url: secretUrl(refusing.url) })
          expect(slackRefused.payload).toMatchObject({ reason: "Notification failed", notification_log: `connection refused by ${refusing.url}` })
          const mattermost = yield* notify("mattermost-webhook", "failing-mattermost", { hostname: failing.url, token: "mm-token-31c7" })
          expect(mattermost.payload.notification_log).toBe("You called ******** as  (********)")
          const mattermostSilent = yield* notify("mattermost-webhook", "silent-mattermost", { hostname: silent.url, token: "mm-token-31c7" })
          expect(mattermostSilent.payload.notification_log).toBe(`no answer from ${silent.url} within 1 seconds`)
          const customData = (origin: string) => ({
            name: "ops",
            url: `${origin}/notify/{{path_secret}}`,
            params: { key: "{{path_secret}}" },
            json_data: { text: "{{body}}" },
            secrets: { path_secret: "custom-secret-90ab" }
          })
          const custom = yield* notify("custom-webhook", "echo-custom", customData(echo.url))
          expect(custom.event, JSON.stringify(custom.payload)).toBe("prefect.automation.action.executed")
          expect(echo.requests.at(-1)!.url).toBe("/notify/custom-secret-90ab?key=custom-secret-90ab")
          const customRefused = yield* notify("custom-webhook", "refused-custom", customData(refusing.url))
          expect(customRefused.payload.notification_log).toBe(`connection refused by ${refusing.url}`)

          // Read back through the API, page by page.
          const events = yield* eventsOfAutomation(automation.id)
          expect(events.filter((e) => e.event === "prefect.automation.action.failed")).toHaveLength(8)
          expectNoSecret("the action events", JSON.stringify(events))
          expect(lines.filter((line) => line.startsWith("WARN")).length).toBeGreaterThanOrEqual(8)
          expectNoSecret("the logs", lines.join("\n"))
          yield* stillServing
        })
      ))

    it.effect("the triggers service goes on performing actions while and after a call hangs, without logging the URL", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const lines: Array<string> = []
          yield* TestClock.setTime(Date.UTC(2026, 10, 24, 9, 0, 0))
          yield* capturingLogs(buildInServer(runBackgroundServices((s) => s.name === "triggers" || s.name === "event_persister")), lines)
          const silent = yield* silentServer()
          const hook = yield* receiver()
          const hanging = yield* blockDocument("webhook", "service-silent", { url: secretUrl(silent.url) })
          const answering = yield* blockDocument("webhook", "service-answering", { url: `${hook.url}/after` })
          const automationOn = (name: string, event: string, block: string) =>
            Effect.map(
              request("POST", "/automations/", {
                body: {
                  name,
                  trigger: { type: "event", posture: "Reactive", expect: [event], threshold: 1, within: 0 },
                  actions: [{ type: "call-webhook", block_document_id: block, payload: "{}" }]
                }
              }),
              (res) => okAs(Automation, res, 201)
            )
          const hangs = yield* automationOn("hangs", "outbound.hang", hanging.id)
          yield* automationOn("answers", "outbound.after", answering.id)
          const emit = (event: string) =>
            Effect.gen(function* () {
              const occurred = new Date(yield* TestClock.currentTimeMillis).toISOString()
              const res = yield* request("POST", "/events", { body: [{ id: randomUUID(), occurred, event, resource: { "prefect.resource.id": "outbound.thing" } }] })
              expect(res.status).toBe(204)
            })

          yield* emit("outbound.hang")
          yield* emit("outbound.after")
          yield* stillServing
          // The second action waits for the first, which is cut off after 1 s.
          yield* eventually(Effect.sync(() => expect(hook.requests).toHaveLength(1)), { nudgeClock: true })
          const failed = yield* eventually(
            Effect.map(eventsOfAutomation(hangs.id), (events) => {
              const found = events.find((e) => e.event === "prefect.automation.action.failed")
              expect(found).toBeDefined()
              return found
            }),
            { nudgeClock: true }
          )
          expect(failed!.payload.reason).toBe(`Webhook call failed: no answer from ${silent.url} within 1 seconds`)
          expectNoSecret("the action events", JSON.stringify(yield* eventsOfAutomation(hangs.id)))

          // And it keeps going.
          yield* TestClock.adjust(Duration.seconds(1))
          yield* emit("outbound.after")
          yield* eventually(Effect.sync(() => expect(hook.requests).toHaveLength(2)), { nudgeClock: true })
          expect(lines.some((line) => line.includes("failed: Webhook call failed"))).toBe(true)
          expectNoSecret("the logs", lines.join("\n"))
          yield* stillServing
        })
      ))
  })
})
