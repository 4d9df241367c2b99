import { describe, expect, it } from "@effect/vitest"
import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import { API_VERSION } from "../../src/version.ts"
import { request, testServer } from "../support/server.ts"
import { ProbedApi, ProbedHandlers, scopedUses } from "./probe.ts"
import { eventually } from "../support/eventually.ts"

const ID = "5b1e4c9e-7f0a-4b8e-9c1d-2f3a4b5c6d7e"

/** An error body carries `detail` and nothing internal. */
const expectDetailOnly = (body: unknown) => {
  expect(Object.keys(body as object)).toEqual(["detail"])
  expect(JSON.stringify(body)).not.toContain("_tag")
}

describe("HTTP conventions", () => {
  it.layer(testServer({ api: { api: ProbedApi, handlers: ProbedHandlers } }), { timeout: 60_000 })((it) => {
    it.effect("lists every missing body field as a 422 detail item", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/probe/items", { body: {} })
        expect(res.status).toBe(422)
        expectDetailOnly(res.body)
        expect(res.body.detail).toEqual([
          { loc: ["body", "name"], msg: "Field required", type: "missing", input: {} },
          { loc: ["body", "paused"], msg: "Field required", type: "missing", input: {} }
        ])
      })
    )

    it.effect("reports wrong types with the offending input", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/probe/items", { body: { name: 5, paused: "maybe", note: 3 } })
        expect(res.status).toBe(422)
        expect(res.body.detail).toEqual([
          { loc: ["body", "name"], msg: "Input should be a valid string", type: "string_type", input: 5 },
          { loc: ["body", "paused"], msg: "Input should be a valid boolean", type: "bool_type", input: "maybe" },
          { loc: ["body", "note"], msg: "Input should be a valid string", type: "string_type", input: 3 }
        ])
      })
    )

    it.effect("reports bounds with ctx and unknown fields as extra_forbidden", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/probe/items", {
          body: { name: "a", paused: false, count: -1, tags: ["x", 2], surprise: true }
        })
        expect(res.status).toBe(422)
        expect(res.body.detail).toEqual(
          expect.arrayContaining([
            {
              loc: ["body", "count"],
              msg: "Input should be greater than or equal to 0",
              type: "greater_than_equal",
              input: -1,
              ctx: { ge: 0 }
            },
            { loc: ["body", "tags", 1], msg: "Input should be a valid string", type: "string_type", input: 2 },
            { loc: ["body", "surprise"], msg: "Extra inputs are not permitted", type: "extra_forbidden", input: true }
          ])
        )
        expect(res.body.detail).toHaveLength(3)
      })
    )

    it.effect("answers a body that is not an object", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/probe/items", { body: [1, 2] })
        expect(res.status).toBe(422)
        expect(res.body.detail[0]).toMatchObject({ loc: ["body"], type: "dict_type" })
      })
    )

    it.effect("answers a JSON null body as a missing one, 422 at body", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/probe/items", { body: "null" })
        expect(res.status).toBe(422)
        expect(res.body.detail).toEqual([{ loc: ["body"], type: "missing", msg: "Field required", input: null }])
        // Even where every field is optional.
        expect((yield* request("POST", "/probe/filter", { body: "null" })).status).toBe(422)
      })
    )

    it.effect("accepts a valid body and fills defaults", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/probe/items", { body: { name: "a", paused: true } })
        expect(res.status).toBe(201)
        expect(res.body).toEqual({ name: "a", paused: true, tags: [] })
      })
    )

    it.effect("answers malformed JSON with 422 json_invalid, not 500", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/probe/items", { body: '{"name": "a", ' })
        expect(res.status).toBe(422)
        expectDetailOnly(res.body)
        expect(res.body.detail[0]).toMatchObject({ loc: ["body", 0], type: "json_invalid", msg: "JSON decode error" })
      })
    )

    it.effect("treats a missing body as an empty object", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/probe/filter")
        expect(res.status).toBe(200)
        expect(res.body).toBe(0)
        const bad = yield* request("POST", "/probe/filter", { body: { offset: -1 } })
        expect(bad.status).toBe(422)
        expect(bad.body.detail[0]).toMatchObject({ loc: ["body", "offset"], type: "greater_than_equal", ctx: { ge: 0 } })
      })
    )

    it.effect("answers an id path segment that is not a UUID with 404", () =>
      Effect.gen(function* () {
        const ok = yield* request("GET", `/probe/items/${ID}`)
        expect(ok.status).toBe(200)
        expect(ok.body).toEqual({ id: ID })
        const res = yield* request("GET", "/probe/items/not-a-uuid")
        expect(res.status).toBe(404)
        expect(res.body).toEqual({ detail: "Not Found" })
        // An empty segment the router reads as another route's (`/artifacts//latest` as `/artifacts/latest`).
        const empty = yield* request("GET", "/artifacts//latest")
        expect(empty.status).toBe(404)
        expect(empty.body).toEqual({ detail: "Not Found" })
      })
    )

    it.effect("answers other bad path parameters with 422 at loc path", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", "/probe/kinds/month")
        expect(res.status).toBe(422)
        expect(res.body.detail).toEqual([
          {
            loc: ["path", "kind"],
            msg: "Input should be 'day' or 'week'",
            type: "enum",
            input: "month",
            ctx: { expected: "'day' or 'week'" }
          }
        ])
      })
    )

    it.effect("answers bad and missing query parameters with 422 at loc query", () =>
      Effect.gen(function* () {
        expect((yield* request("GET", "/probe/search?limit=3")).body).toBe(3)
        const bad = yield* request("GET", "/probe/search?limit=0")
        expect(bad.status).toBe(422)
        expect(bad.body.detail[0]).toMatchObject({ loc: ["query", "limit"], type: "greater_than", ctx: { gt: 0 } })
        const missing = yield* request("GET", "/probe/search")
        expect(missing.status).toBe(422)
        expect(missing.body.detail[0]).toMatchObject({ loc: ["query", "limit"], type: "missing" })
      })
    )

    it.effect("answers a handler's not-found and conflict with 404 and 409 detail bodies", () =>
      Effect.gen(function* () {
        const missing = yield* request("DELETE", `/probe/missing/${ID}`)
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual({ detail: "Item not found" })
        const conflict = yield* request("POST", "/probe/conflict", { body: {} })
        expect(conflict.status).toBe(409)
        expect(conflict.body).toEqual({ detail: "Object already exists" })
      })
    )

    it.effect("answers a failure nobody expected with 500 and the reference's body", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", "/probe/boom")
        expect(res.status).toBe(500)
        expect(res.body).toEqual({ exception_message: "Internal Server Error" })
      })
    )

    it.effect("releases what a handler acquired in the request's scope once it has answered", () =>
      Effect.gen(function* () {
        const before = { ...scopedUses }
        for (let i = 0; i < 3; i++) expect((yield* request("GET", "/probe/scoped")).body).toBe(1)
        expect(scopedUses.acquired - before.acquired).toBe(3)
        yield* eventually(Effect.sync(() => expect(scopedUses.released - before.released).toBe(3)))
      })
    )

    it.effect("answers 500 when node refuses the answer a handler made, and serves on", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", "/probe/bad-header")
        expect(res.status).toBe(500)
        expect(res.body).toEqual({ exception_message: "Internal Server Error" })
        expect((yield* request("GET", "/probe/kinds/day")).body).toBe("day")
      })
    )

    it.effect("routes a path with or without a trailing slash the same", () =>
      Effect.gen(function* () {
        for (const path of ["/health", "/health/", "/admin/version/"]) {
          expect((yield* request("GET", path)).status).toBe(200)
        }
        const created = yield* request("POST", "/probe/items/", { body: { name: "b", paused: false } })
        expect(created.status).toBe(201)
        expect((yield* request("GET", `/probe/items/${ID}/`)).body).toEqual({ id: ID })
      })
    )

    it.effect("answers unknown routes with 404 and known routes with another method with 405", () =>
      Effect.gen(function* () {
        const unknown = yield* request("GET", "/no/such/route")
        expect(unknown.status).toBe(404)
        expect(unknown.body).toEqual({ detail: "Not Found" })
        const wrongMethod = yield* request("POST", "/health")
        expect(wrongMethod.status).toBe(405)
        expect(wrongMethod.body).toEqual({ detail: "Method Not Allowed" })
        expect(wrongMethod.headers.get("allow")).toBe("GET")
        const outside = yield* request("GET", "/health", { fromRoot: true })
        expect(outside.status).toBe(404)
        expect(outside.body).toEqual({ detail: "Not Found" })
      })
    )

    it.effect("accepts a version header at or above 0.8.0 and refuses an older or malformed one with the reference's 400", () =>
      Effect.gen(function* () {
        const version = (value: string) => request("GET", "/hello", { headers: { "x-service-api-version": value } })
        // No upper bound and no major-version rule: any x.y.z from 0.8.0 on; Python's int() reads each part.
        for (const accepted of [API_VERSION, "0.8.0", "0.99.0", "1.0.0", "3.7.12", "0.08.0", "+1.0.0", "1. 0.0", "1_0.0.0", "99999999999999999999.0.0"]) {
          const res = yield* version(accepted)
          expect([accepted, res.status]).toEqual([accepted, 200])
        }
        for (const outdated of ["0.7.9", "0.0.0", "-1.0.0"]) {
          const res = yield* version(outdated)
          expect(res.status).toBe(400)
          expectDetailOnly(res.body)
          expect(res.body.detail).toBe(`The request specified API version ${outdated} but this server requires version 0.8.0 or higher.`)
        }
        for (const malformed of ["latest", "1.0", "1.0.0.0", "1..0", "1.0.x", "1.0.0-rc1", "v1.0.0", "1__0.0.0"]) {
          const res = yield* version(malformed)
          expect(res.status).toBe(400)
          expect(res.body.detail).toBe(
            `Invalid X-SERVICE-API-VERSION header format.Expected header in format 'x.y.z' but received ${malformed}`
          )
        }
        // Checked by the routes, as the reference's dependency: an unknown path is still a 404.
        expect((yield* request("GET", "/no/such/route", { headers: { "x-service-api-version": "latest" } })).status).toBe(404)
      })
    )

    it.effect("serves the OpenAPI document and a docs page generated from the Api", () =>
      Effect.gen(function* () {
        const doc = yield* request("GET", "/openapi.json")
        expect(doc.status).toBe(200)
        expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(["/health", "/admin/settings", "/probe/items"]))
        const docs = yield* request("GET", "/docs")
        expect(docs.status).toBe(200)
        expect(docs.headers.get("content-type")).toContain("text/html")
      })
    )

    it.effect("answers a body nested deeper than the reference's parser goes with its 400, and takes one within", () =>
      Effect.gen(function* () {
        const nested = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`
        const deep = yield* request("POST", "/probe/items", { body: `{"name": "a", "paused": true, "note": ${nested(1000)}}` })
        expect(deep.status).toBe(400)
        expect(deep.body).toEqual({ detail: "There was an error parsing the body" })
        // 999 lists inside the body's object: decoded, and the mistake reported with its (deep) input.
        const within = yield* request("POST", "/probe/items", { body: `{"name": "a", "paused": true, "note": ${nested(999)}}` })
        expect(within.status).toBe(422)
        expect(within.body.detail[0]).toMatchObject({ loc: ["body", "note"], type: "string_type" })
        // And stored and read back as deep as that.
        const flow = yield* request("POST", "/flows/", { body: { name: "deep-parameters" } })
        const parameters = `{"p": ${nested(997)}}`
        const run = yield* request("POST", "/flow_runs/", { body: `{"flow_id": "${flow.body.id}", "parameters": ${parameters}}` })
        expect(run.status).toBe(201)
        const read = yield* request("GET", `/flow_runs/${run.body.id}`)
        expect(JSON.stringify(read.body.parameters)).toBe(parameters.replace(/ /g, ""))
      })
    )

    it.effect("refuses NUL characters and unpaired surrogates wherever they are sent, with 422 at their place", () =>
      Effect.gen(function* () {
        const body = yield* request("POST", "/probe/items", {
          body: '{"name": "a\\u0000b", "paused": true, "tags": ["ok", "\\ud800", "\\ud83d\\ude00"], "n\\u0000te": null}'
        })
        expect(body.status).toBe(422)
        expectDetailOnly(body.body)
        expect(body.body.detail).toEqual([
          { loc: ["body", "name"], msg: "Input should be a valid string, NUL characters (\\u0000) are not allowed", type: "string_unicode", input: "a\u0000b" },
          { loc: ["body", "tags", 1], msg: "Input should be a valid string, unpaired surrogates are not allowed", type: "string_unicode", input: "\ud800" },
          { loc: ["body", "n\u0000te"], msg: "Input should be a valid string, NUL characters (\\u0000) are not allowed", type: "string_unicode", input: "n\u0000te" }
        ])
        const path = yield* request("GET", "/variables/name/a%00b")
        expect(path.status).toBe(422)
        expect(path.body.detail[0]).toMatchObject({ loc: ["path", "name"], type: "string_unicode", input: "a\u0000b" })
        const query = yield* request("GET", "/probe/search?limit=1&other=%00")
        expect(query.status).toBe(422)
        expect(query.body.detail[0]).toMatchObject({ loc: ["query", "other"], type: "string_unicode" })
        // An id path segment that is not a UUID stays a 404, NUL or not.
        expect((yield* request("GET", `/probe/items/${ID}%00`)).status).toBe(404)
        // A pair of surrogates is one character, and welcome.
        expect((yield* request("POST", "/probe/items", { body: '{"name": "\\ud83d\\ude00", "paused": true}' })).status).toBe(201)
      })
    )

    it.effect("refuses numbers too large to be finite wherever they are sent, with 422 finite_number at their place", () =>
      Effect.gen(function* () {
        const variable = yield* request("POST", "/variables/", { body: '{"name": "huge", "value": {"list": [1, -1e400]}}' })
        expect(variable.status).toBe(422)
        expect(variable.body.detail).toEqual([
          { loc: ["body", "value", "list", 1], msg: "Input should be a finite number", type: "finite_number", input: null }
        ])
        const digits = yield* request("POST", "/flows/filter", { body: `{"limit": ${"9".repeat(400)}}` })
        expect(digits.status).toBe(422)
        expect(digits.body.detail[0]).toMatchObject({ loc: ["body", "limit"], type: "finite_number" })
        // Large but finite numbers, and exponents inside strings, are values like any other.
        expect((yield* request("POST", "/variables/", { body: '{"name": "big", "value": [1e300, "1e400"]}' })).status).toBe(201)
      })
    )

    it.effect("answers a value too large for the database's index with 422, storing nothing", () =>
      Effect.gen(function* () {
        // Random text does not compress: 6000 bytes are more than an index row holds.
        const name = randomBytes(4500).toString("base64url")
        const res = yield* request("POST", "/work_pools/", { body: { name, type: "process" } })
        expect(res.status).toBe(422)
        expect(res.body).toEqual({ detail: "Invalid input: a value is too large to be stored" })
        expect((yield* request("POST", "/work_pools/filter", { body: { work_pools: { name: { any_: [name] } } } })).body).toEqual([])
      })
    )

    it.effect("reads query parameters named like an object's own properties as plain parameters", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", "/probe/search?limit=2&constructor=x&__proto__=y&toString=z")
        expect(res.status).toBe(200)
        expect(res.body).toBe(2)
        const bad = yield* request("GET", "/probe/search?limit=0&constructor=1")
        expect(bad.status).toBe(422)
        expect(bad.body.detail[0]).toMatchObject({ loc: ["query", "limit"] })
      })
    )

    it.effect("answers a request head larger than Node takes with JSON 431", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", `/health?q=${"x".repeat(20_000)}`)
        expect(res.status).toBe(431)
        expect(res.body).toEqual({ detail: "Request Header Fields Too Large" })
        // Declared, as the 408 of a request too slow to arrive, in the OpenAPI document.
        const doc = yield* request("GET", "/openapi.json")
        expect(Object.keys(doc.body.paths["/flows/filter"].post.responses)).toEqual(expect.arrayContaining(["408", "413", "422", "431"]))
      })
    )

    it.effect("answers CORS preflights and marks responses with the allowed origin", () =>
      Effect.gen(function* () {
        const preflight = yield* request("OPTIONS", "/health", {
          headers: {
            origin: "http://ui.example",
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type,authorization"
          }
        })
        expect(preflight.status).toBe(200)
        expect(preflight.headers.get("access-control-allow-origin")).toBe("*")
        expect(preflight.headers.get("access-control-allow-headers")).toBe("content-type,authorization")
        const plain = yield* request("GET", "/health", { headers: { origin: "http://ui.example" } })
        expect(plain.headers.get("access-control-allow-origin")).toBe("*")
      })
    )
  })
})
