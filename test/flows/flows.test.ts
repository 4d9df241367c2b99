import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const createFlow = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/flows/", { body }), (res) => {
    expect([200, 201]).toContain(res.status)
    return res.body
  })

describe("flows", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("creates a flow with 201, and answers a repeated name with the same flow and 200", () =>
      Effect.gen(function* () {
        const first = yield* request("POST", "/flows/", { body: { name: "etl", tags: ["db", "nightly"] } })
        expect(first.status).toBe(201)
        expect(first.body).toMatchObject({ name: "etl", tags: ["db", "nightly"], labels: {} })
        expect(first.body.id).toMatch(/^[0-9a-f-]{36}$/)
        expect(new Date(first.body.created as string).toISOString()).toBe(first.body.created)
        const again = yield* request("POST", "/flows/", { body: { name: "etl", tags: ["other"] } })
        expect(again.status).toBe(200)
        expect(again.body.id).toBe(first.body.id)
        expect(again.body.tags).toEqual(["db", "nightly"])
      })
    )

    it.effect("rejects a name with a forbidden character and unknown fields with 422", () =>
      Effect.gen(function* () {
        const badName = yield* request("POST", "/flows/", { body: { name: "a/b" } })
        expect(badName.status).toBe(422)
        expect(badName.body.detail[0]).toMatchObject({ loc: ["body", "name"], type: "string_pattern_mismatch" })
        const extra = yield* request("POST", "/flows/", { body: { name: "ok", color: "red" } })
        expect(extra.status).toBe(422)
        expect(extra.body.detail[0]).toMatchObject({ loc: ["body", "color"], type: "extra_forbidden" })
        const missing = yield* request("POST", "/flows/", { body: {} })
        expect(missing.body.detail[0]).toMatchObject({ loc: ["body", "name"], type: "missing" })
      })
    )

    it.effect("reads a flow by id and by name, 404 otherwise", () =>
      Effect.gen(function* () {
        const flow = yield* createFlow({ name: "reader" })
        expect((yield* request("GET", `/flows/${flow.id}`)).body).toEqual(flow)
        expect((yield* request("GET", "/flows/name/reader")).body).toEqual(flow)
        const missing = yield* request("GET", `/flows/${MISSING}`)
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual({ detail: "Flow not found" })
        expect((yield* request("GET", "/flows/name/nobody")).body).toEqual({ detail: "Flow not found" })
        expect((yield* request("GET", "/flows/not-a-uuid")).status).toBe(404)
      })
    )

    it.effect("updates tags with 204 and answers 404 for an unknown flow", () =>
      Effect.gen(function* () {
        const flow = yield* createFlow({ name: "tagged", tags: ["a"] })
        const res = yield* request("PATCH", `/flows/${flow.id}`, { body: { tags: ["b", "c"] } })
        expect(res.status).toBe(204)
        expect(res.text).toBe("")
        const after = (yield* request("GET", `/flows/${flow.id}`)).body
        expect(after.tags).toEqual(["b", "c"])
        expect(after.name).toBe("tagged")
        expect(Date.parse(after.updated as string)).toBeGreaterThanOrEqual(Date.parse(flow.updated as string))
        expect((yield* request("PATCH", `/flows/${MISSING}`, { body: { tags: [] } })).status).toBe(404)
        const badField = yield* request("PATCH", `/flows/${flow.id}`, { body: { name: "renamed" } })
        expect(badField.status).toBe(422)
      })
    )

    it.effect("deletes a flow with 204, then it is gone", () =>
      Effect.gen(function* () {
        const flow = yield* createFlow({ name: "doomed" })
        expect((yield* request("DELETE", `/flows/${flow.id}`)).status).toBe(204)
        expect((yield* request("GET", `/flows/${flow.id}`)).status).toBe(404)
        const again = yield* request("DELETE", `/flows/${flow.id}`)
        expect(again.status).toBe(404)
        expect(again.body).toEqual({ detail: "Flow not found" })
      })
    )
  })
})
