import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Layer, List, Logger, LogLevel } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ok } from "../support/api.ts"
import { rawRequest } from "../support/raw-http.ts"
import { request, testServer } from "../support/server.ts"

const SECRET = "hunter2-s3cr3t-body-value"

/** Every line the server logs, whole: message, annotations and cause. */
const lines: Array<string> = []
const capture = Logger.make(({ annotations, cause, logLevel, message }) => {
  const parts = List.isList(message) ? List.toArray(message) : Array.isArray(message) ? message : [message]
  lines.push(`${logLevel.label} ${parts.map((p) => (typeof p === "string" ? p : JSON.stringify(p))).join(" ")} ${JSON.stringify([...annotations])} ${Cause.pretty(cause)}`)
})

/** Far below server.api.request_read_timeout: a refusal must not wait for the body. */
const PROMPTLY = "2 seconds"

const send = (method: string, url: string, contentType: string | undefined, body: string) =>
  rawRequest(method, `/v2/api${url}`, {
    headers: { ...(contentType === undefined ? {} : { "content-type": contentType }), "content-length": String(Buffer.byteLength(body)) },
    chunks: [body]
  }).pipe(Effect.timeoutFail({ duration: PROMPTLY, onTimeout: () => new Error(`${method} ${url} (${contentType}) got no answer`) }))

const multipart = (boundary: string) =>
  [
    `--${boundary}`,
    `Content-Disposition: form-data; name="name"`,
    "",
    SECRET,
    `--${boundary}`,
    `Content-Disposition: form-data; name="file"; filename="upload.bin"`,
    "Content-Type: application/octet-stream",
    "",
    SECRET.repeat(200),
    `--${boundary}--`,
    ""
  ].join("\r\n")

/** The ways a body that is not JSON arrives, each with the name of a flow it would create. */
const notJson = [
  ["application/x-www-form-urlencoded", `name=${SECRET}-form`],
  ["multipart/form-data; boundary=XyZ", multipart("XyZ")],
  ["text/plain", `{"name": "${SECRET}-text"}`],
  ["text/plain; charset=utf-8", `name=${SECRET}-text`],
  ["application/octet-stream", `{"name": "${SECRET}-bytes"}`],
  ["application/xml", `<flow><name>${SECRET}-xml</name></flow>`],
  ["text/xml", `<flow><name>${SECRET}-xml</name></flow>`],
  ["application/jsonl", `{"name": "${SECRET}-jsonl"}`]
] as const

const flowsNamed = (prefix: string) =>
  Effect.map(request("POST", "/flows/filter", { body: { flows: { name: { like_: prefix } } } }), (res) => ok(res, 200))

const withTmpDir = <A, E, R>(effect: (dir: string) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const previous = process.env.TMPDIR
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "baton-multipart-"))
      // The platform's multipart parser writes its parts under os.tmpdir(), which reads TMPDIR.
      process.env.TMPDIR = dir
      return { dir, previous }
    }),
    ({ dir }) => effect(dir),
    ({ dir, previous }) =>
      Effect.sync(() => {
        if (previous === undefined) delete process.env.TMPDIR
        else process.env.TMPDIR = previous
        fs.rmSync(dir, { recursive: true, force: true })
      })
  )

const server = testServer({ overrides: { "server.api.request_read_timeout": 30 } }).pipe(
  Layer.provide(Logger.replace(Logger.defaultLogger, capture)),
  Layer.provide(Logger.minimumLogLevel(LogLevel.All))
)

describe("request bodies: JSON endpoints decode only JSON", () => {
  it.layer(server, { timeout: 60_000 })((it) => {
    it.effect("refuses every other content type with 422 at once, without reading the body or creating anything", () =>
      Effect.gen(function* () {
        for (const [contentType, body] of notJson) {
          const answer = yield* send("POST", "/flows/", contentType, body)
          expect(answer.status, contentType).toBe(422)
          const mediaType = contentType.split(";")[0]
          expect(answer.body, contentType).toEqual({
            detail: [{
              loc: ["body"],
              type: "model_attributes_type",
              msg: `Unsupported content type '${mediaType}': this endpoint takes a JSON body (application/json)`
            }]
          })
          // The body was never read: the connection goes with it.
          expect(answer.headers.connection, contentType).toBe("close")
          expect(answer.text).not.toContain(SECRET)
        }
        // Filters, whose fields are all optional, and updates too.
        expect((yield* send("POST", "/flows/filter", "text/plain", SECRET)).status).toBe(422)
        expect((yield* send("POST", "/flows/filter", "application/x-www-form-urlencoded", `limit=1&x=${SECRET}`)).status).toBe(422)
        const flow = ok(yield* request("POST", "/flows/", { body: { name: "content-types" } }))
        expect((yield* send("PATCH", `/flows/${flow.id}`, "application/x-www-form-urlencoded", `tags=${SECRET}`)).status).toBe(422)
        expect(ok(yield* request("GET", `/flows/${flow.id}`), 200).tags).toEqual([])
        // Nothing was created, and the server serves as before.
        expect(yield* flowsNamed(SECRET)).toEqual([])
        const health = yield* send("GET", "/health", undefined, "")
        expect(health.status).toBe(200)
      })
    )

    it.effect("refuses them on the routes whose body is a list too (logs, events, schedules, bulk runs)", () =>
      Effect.gen(function* () {
        const flow = ok(yield* request("POST", "/flows/", { body: { name: "list-bodies" } }))
        const deployment = ok(yield* request("POST", "/deployments/", { body: { name: "list-bodies", flow_id: flow.id } }))
        const log = { name: "l", level: 20, message: SECRET, timestamp: "2024-01-01T00:00:00Z" }
        for (const url of ["/logs/", "/events", `/deployments/${deployment.id}/schedules`, `/deployments/${deployment.id}/create_flow_run/bulk`]) {
          for (const contentType of ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=XyZ"]) {
            const answer = yield* send("POST", url, contentType, contentType.startsWith("multipart") ? multipart("XyZ") : JSON.stringify([log]))
            expect(answer.status, `${url} ${contentType}`).toBe(422)
            expect(answer.body.detail[0], `${url} ${contentType}`).toMatchObject({ loc: ["body"], type: "list_type" })
          }
        }
        expect(ok(yield* request("POST", "/logs/filter", { body: {} }), 200)).toEqual([])
        expect(ok(yield* request("GET", `/deployments/${deployment.id}/schedules`), 200)).toEqual([])
        expect(ok(yield* request("POST", "/flow_runs/filter", { body: {} }), 200)).toEqual([])
      })
    )

    it.effect("takes application/json with any parameters and a structured +json type; refuses a body without a content type", () =>
      Effect.gen(function* () {
        const charset = yield* send("POST", "/flows/", "application/json; charset=utf-8", JSON.stringify({ name: "with-charset" }))
        expect(charset.status).toBe(201)
        const upper = yield* send("POST", "/flows/", "Application/JSON;charset=UTF-8", JSON.stringify({ name: "upper-case" }))
        expect(upper.status).toBe(201)
        const structured = yield* send("PATCH", `/flows/${charset.body.id}`, "application/merge-patch+json", JSON.stringify({ tags: ["merged"] }))
        expect(structured.status).toBe(204)
        expect(ok(yield* request("GET", `/flows/${charset.body.id}`), 200).tags).toEqual(["merged"])
        // A body without a Content-Type is refused, as the reference refuses it: browsers send one cross-site without a preflight.
        const bare = yield* send("POST", "/flows/", undefined, JSON.stringify({ name: "no-content-type" }))
        expect(bare.status).toBe(422)
        expect(bare.headers.connection).toBe("close")
        expect(bare.body.detail).toEqual([
          { loc: ["body"], type: "model_attributes_type", msg: "A body without a Content-Type is not read: this endpoint takes a JSON body (application/json)" }
        ])
        expect(ok(yield* request("POST", "/flows/filter", { body: { flows: { name: { any_: ["no-content-type"] } } } }), 200)).toEqual([])
        // Malformed JSON is still the reference's json_invalid.
        const malformed = yield* send("POST", "/flows/", "application/json", `{"name": ${SECRET}`)
        expect(malformed.status).toBe(422)
        expect(malformed.body.detail[0].type).toBe("json_invalid")
      })
    )

    it.effect("reads a missing body as {} when it has no content type or a JSON one, and refuses an empty form", () =>
      Effect.gen(function* () {
        for (const contentType of [undefined, "application/json"]) {
          const none = yield* send("POST", "/flows/filter", contentType, "")
          expect(none.status, String(contentType)).toBe(200)
          expect(Array.isArray(none.body)).toBe(true)
        }
        const emptyForm = yield* send("POST", "/flows/filter", "application/x-www-form-urlencoded", "")
        expect(emptyForm.status).toBe(422)
      })
    )

    it.effect("takes a template as JSON or as plain text, and nothing else", () =>
      Effect.gen(function* () {
        for (const url of ["/templates/validate", "/automations/templates/validate"]) {
          expect((yield* send("POST", url, "text/plain", "Hello {{ flow.name }}")).status).toBe(204)
          expect((yield* send("POST", url, "text/plain; charset=utf-8", "")).status).toBe(204)
          expect((yield* send("POST", url, "application/json", JSON.stringify("Hello {{ flow.name }}"))).status).toBe(204)
          expect((yield* send("POST", url, undefined, "")).status).toBe(204)
          for (const contentType of ["application/x-www-form-urlencoded", "application/octet-stream", "multipart/form-data; boundary=XyZ", "text/html"]) {
            const refused = yield* send("POST", url, contentType, "Hello {{ flow.name }}")
            expect(refused.status, `${url} ${contentType}`).toBe(422)
            expect(refused.body.detail[0].msg).toContain("a JSON body (application/json) or plain text (text/plain)")
          }
        }
      })
    )

    it.effect("writes no temporary file for a multipart body", () =>
      withTmpDir((dir) =>
        Effect.gen(function* () {
          for (const url of ["/flows/", "/flows/filter", "/logs/", "/templates/validate"]) {
            const answer = yield* send("POST", url, "multipart/form-data; boundary=XyZ", multipart("XyZ"))
            expect(answer.status, url).toBe(422)
          }
          expect(fs.readdirSync(dir)).toEqual([])
          expect((yield* send("GET", "/health", undefined, "")).status).toBe(200)
        })
      )
    )

    it.effect("never logs a request body, whichever way it was wrong", () =>
      Effect.gen(function* () {
        const flow = ok(yield* request("POST", "/flows/", { body: { name: "logged-nowhere" } }))
        const wrong: Array<readonly [string, string, string | undefined, string]> = [
          ["POST", "/flows/filter", "text/plain", SECRET],
          ["POST", "/flows/", "text/plain", SECRET],
          ["POST", "/flows/", "application/x-www-form-urlencoded", `name=${SECRET}`],
          ["POST", "/flows/", "multipart/form-data; boundary=XyZ", multipart("XyZ")],
          ["POST", "/flows/", "application/xml", `<x>${SECRET}</x>`],
          ["POST", "/flows/", "application/octet-stream", SECRET],
          // Not JSON, and JSON of the wrong shape or with values the database refuses.
          ["POST", "/flows/", "application/json", SECRET],
          ["POST", "/flows/", "application/json", `{"name": "${SECRET}`],
          ["POST", "/flows/", "application/json", JSON.stringify({ name: 1, tags: SECRET, [SECRET]: SECRET })],
          ["POST", "/flows/filter", undefined, JSON.stringify({ flows: { id: { any_: [SECRET] } } })],
          ["PATCH", `/flows/${flow.id}`, "application/json", JSON.stringify({ tags: [SECRET, 1] })],
          ["POST", "/logs/", "application/json", JSON.stringify([{ name: SECRET, level: "x", message: SECRET }])],
          ["POST", "/templates/validate", "text/plain", `{{ ${SECRET} `],
          ["POST", "/variables/", "application/json", JSON.stringify({ name: "v", value: SECRET.repeat(10_000) })]
        ]
        for (const [method, url, contentType, body] of wrong) {
          const answer = yield* send(method, url, contentType, body)
          expect(answer.status, `${method} ${url} ${contentType}`).toBeGreaterThanOrEqual(400)
          expect(answer.status, `${method} ${url} ${contentType}`).toBeLessThan(500)
        }
        expect(lines.some((line) => line.includes("request"))).toBe(true)
        expect(lines.filter((line) => line.includes(SECRET))).toEqual([])
        expect((yield* send("GET", "/health", undefined, "")).status).toBe(200)
      })
    )
  })
})
