import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { rawRequest } from "../support/raw-http.ts"
import { request, testServer } from "../support/server.ts"

const json = { "content-type": "application/json" }

describe("request body limit (server.api.max_request_body_size)", () => {
  it.layer(testServer({ overrides: { "server.api.max_request_body_size": 1024 } }), { timeout: 60_000 })((it) => {
    it.effect("refuses a body announced larger than the limit with 413 before reading it, and closes the connection", () =>
      Effect.gen(function* () {
        // The body is announced and never sent: the answer comes from the headers alone.
        const announced = yield* rawRequest("POST", "/v2/api/flows/", { headers: { ...json, "content-length": "2048" }, end: false })
        expect(announced.status).toBe(413)
        expect(announced.body).toEqual({ detail: "Request body is larger than the limit of 1,024 bytes." })
        expect(announced.headers.connection).toBe("close")
        // Checked before parsing: not JSON at all, still 413 (not 422).
        const notJson = yield* request("POST", "/flows/", { body: "x".repeat(2000) })
        expect(notJson.status).toBe(413)
        const large = yield* request("POST", "/flows/", {
          body: { name: "large", description: "d".repeat(1100) },
          headers: { origin: "http://ui.example" }
        })
        expect(large.status).toBe(413)
        expect(large.headers.get("access-control-allow-origin")).toBe("*")
        const fits = yield* request("POST", "/flows/", { body: { name: "fits", tags: ["t".repeat(900)] } })
        expect(fits.status).toBe(201)
      })
    )

    it.effect("reads a chunked body up to the limit: beyond it 413, within it the request is served as usual", () =>
      Effect.gen(function* () {
        const over = yield* rawRequest("POST", "/v2/api/flows/", { headers: json, chunks: ['{"name": "', "y".repeat(600), "z".repeat(600), '"}'] })
        expect(over.status).toBe(413)
        expect(over.headers.connection).toBe("close")
        const chunked = yield* rawRequest("POST", "/v2/api/flows/", { headers: json, chunks: ['{"name":', ' "chunked', '-flow"}'] })
        expect(chunked.status).toBe(201)
        expect(chunked.body.name).toBe("chunked-flow")
        expect((yield* request("GET", `/flows/${chunked.body.id}`)).body.name).toBe("chunked-flow")
        const malformed = yield* rawRequest("POST", "/v2/api/flows/", { headers: json, chunks: ['{"name":', " oops"] })
        expect(malformed.status).toBe(422)
        expect(malformed.body.detail[0].type).toBe("json_invalid")
        const filtered = yield* rawRequest("POST", "/v2/api/flows/filter", { headers: json, chunks: ['{"limit": 1', "}"] })
        expect(filtered.status).toBe(200)
        expect(filtered.body).toHaveLength(1)
      })
    )
  })

  // The platform reads at most 10 MiB of a body unless told otherwise: a limit above that is the one
  // that counts, for a body announced and for a chunked one.
  const twelveMiB = 12 * 1024 * 1024
  layer(testServer({ overrides: { "server.api.max_request_body_size": twelveMiB } }), { timeout: 60_000 })((it) => {
    it.effect("serves a body larger than the platform's own 10 MiB when the limit allows it", () =>
      Effect.gen(function* () {
        const tag = "t".repeat(11 * 1024 * 1024)
        const announced = yield* request("POST", "/flows/", { body: { name: "eleven-mib", tags: [tag] } })
        expect(announced.status).toBe(201)
        expect(announced.body.tags[0]).toHaveLength(tag.length)
        const chunked = yield* rawRequest("POST", "/v2/api/flows/", {
          headers: json,
          chunks: ['{"name": "eleven-mib-chunked", "tags": ["', tag, '"]}']
        })
        expect(chunked.status).toBe(201)
        expect(chunked.body.tags[0]).toHaveLength(tag.length)
        const over = yield* rawRequest("POST", "/v2/api/flows/", { headers: { ...json, "content-length": String(twelveMiB + 1) }, end: false })
        expect(over.status).toBe(413)
      })
    )
  })
})
