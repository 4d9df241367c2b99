import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const MISSING = "00000000-0000-4000-8000-000000000000"

const FILTERS = [
  { object: "flow", property: "name", type: "string", operation: "equals", value: "foo" },
  { object: "flow_run", property: "name", type: "string", operation: "equals", value: "bar" },
  { object: "flow_run", property: "state", type: "state", operation: "or", value: ["PENDING", "COMPLETED", "RUNNING"] }
]

describe("saved searches", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("PUT creates (201) or replaces the filters of the search of that name (200)", () =>
      Effect.gen(function* () {
        const created = yield* request("PUT", "/saved_searches/", { body: { name: "My SavedSearch", filters: FILTERS } })
        expect(created.status).toBe(201)
        expect(created.body).toMatchObject({ name: "My SavedSearch", filters: FILTERS })
        expect(ok(yield* request("GET", `/saved_searches/${created.body.id}`), 200)).toEqual(created.body)
        const again = yield* request("PUT", "/saved_searches/", { body: { name: "My SavedSearch" } })
        expect(again.status).toBe(200)
        expect(again.body).toMatchObject({ id: created.body.id, filters: [] })
        const extra = yield* request("PUT", "/saved_searches/", {
          body: { name: "Extra keys", filters: [{ ...FILTERS[0], colour: "red" }] }
        })
        expect(extra.body.filters).toEqual([FILTERS[0]])
        expect((yield* request("PUT", "/saved_searches/", { body: { filters: [] } })).status).toBe(422)
        expect((yield* request("PUT", "/saved_searches/", { body: { name: "x", filters: [{ object: "flow" }] } })).status).toBe(422)
        expect((yield* request("PUT", "/saved_searches/", { body: { name: "x", other: 1 } })).status).toBe(422)
      })
    )

    it.effect("lists by name, a page at a time; reads and deletes by id", () =>
      Effect.gen(function* () {
        const x = ok(yield* request("PUT", "/saved_searches/", { body: { name: "Z search X" } }), 201)
        yield* request("PUT", "/saved_searches/", { body: { name: "Z search Y" } })
        const all = ok(yield* request("POST", "/saved_searches/filter", { body: {} }), 200).map((s) => s.name)
        expect(all).toEqual([...all].sort())
        expect(all.slice(-2)).toEqual(["Z search X", "Z search Y"])
        expect(ok(yield* request("POST", "/saved_searches/filter", { body: { limit: 1 } }), 200)).toHaveLength(1)
        expect(ok(yield* request("POST", "/saved_searches/filter", { body: { offset: all.length - 1 } }), 200).map((s) => s.name)).toEqual([
          "Z search Y"
        ])
        expect((yield* request("GET", `/saved_searches/${MISSING}`)).body).toEqual({ detail: "Saved search not found" })
        expect((yield* request("DELETE", `/saved_searches/${x.id}`)).status).toBe(204)
        expect((yield* request("GET", `/saved_searches/${x.id}`)).status).toBe(404)
        expect((yield* request("DELETE", `/saved_searches/${x.id}`)).status).toBe(404)
      })
    )
  })
})
