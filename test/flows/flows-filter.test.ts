import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { request, testServer } from "../support/server.ts"

const createFlow = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/flows/", { body }), (res) => {
    expect([200, 201]).toContain(res.status)
    return res.body
  })

describe("flows filter, count, paginate and bulk delete", () => {
  it.layer(testServer({ overrides: { "server.api.default_limit": 5 } }), { timeout: 60_000 })((it) => {
    const seed = Effect.gen(function* () {
      const names = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]
      const flows: Array<any> = []
      for (const [i, name] of names.entries()) {
        flows.push(yield* createFlow({ name: `f-${name}`, tags: i % 2 === 0 ? ["even", "x"] : i === 1 ? [] : ["odd"] }))
        // The server's clock is the test's: one second between creations orders them.
        yield* TestClock.adjust("1 second")
      }
      return flows
    })

    it.effect("filters by id, name, tags and operator, sorts, and pages with the default limit", () =>
      Effect.gen(function* () {
        const flows = yield* seed
        const names = (res: { body: Array<{ name: string }> }) => res.body.map((f) => f.name)
        const filter = (body: unknown) => request("POST", "/flows/filter", { body })

        const all = yield* filter({})
        expect(all.status).toBe(200)
        expect(names(all)).toEqual(["f-alpha", "f-beta", "f-delta", "f-epsilon", "f-eta"])

        expect(names(yield* filter({ flows: { id: { any_: [flows[0].id, flows[2].id] } } }))).toEqual(["f-alpha", "f-gamma"])
        expect(names(yield* filter({ flows: { id: { not_any_: [flows[0].id] } }, limit: 2 }))).toEqual(["f-beta", "f-delta"])
        expect(names(yield* filter({ flows: { name: { like_: "ET" } } }))).toEqual(["f-beta", "f-eta", "f-zeta"])
        expect(names(yield* filter({ flows: { name: { any_: ["f-zeta", "f-nope"] } } }))).toEqual(["f-zeta"])
        expect(names(yield* filter({ flows: { tags: { all_: ["even", "x"] } } }))).toEqual([
          "f-alpha",
          "f-epsilon",
          "f-eta",
          "f-gamma"
        ])
        expect(names(yield* filter({ flows: { tags: { is_null_: true } } }))).toEqual(["f-beta"])
        expect(
          names(yield* filter({ flows: { operator: "or_", name: { any_: ["f-beta"] }, tags: { all_: ["odd"] } } }))
        ).toEqual(["f-beta", "f-delta", "f-zeta"])
        expect(
          names(yield* filter({ flows: { operator: "and_", name: { any_: ["f-beta"] }, tags: { all_: ["odd"] } } }))
        ).toEqual([])
        expect(names(yield* filter({ sort: "NAME_DESC", limit: 3 }))).toEqual(["f-zeta", "f-gamma", "f-eta"])
        expect(names(yield* filter({ sort: "CREATED_DESC", limit: 2 }))).toEqual(["f-eta", "f-zeta"])
        expect(names(yield* filter({ offset: 5 }))).toEqual(["f-gamma", "f-zeta"])

        const tooMany = yield* filter({ limit: 6 })
        expect(tooMany.status).toBe(422)
        expect(tooMany.body).toEqual({ detail: "Invalid limit: must be less than or equal to 5." })
        const badSort = yield* filter({ sort: "SIZE_ASC" })
        expect(badSort.status).toBe(422)
        expect(badSort.body.detail[0]).toMatchObject({ loc: ["body", "sort"], type: "enum" })
        const badOperator = yield* filter({ flows: { operator: "xor_" } })
        expect(badOperator.body.detail[0]).toMatchObject({ loc: ["body", "flows", "operator"] })
        const unknownCriterion = yield* filter({ flows: { colour: { any_: ["red"] } } })
        expect(unknownCriterion.body.detail[0]).toMatchObject({ loc: ["body", "flows", "colour"], type: "extra_forbidden" })
        expect((yield* filter({ offset: -1 })).status).toBe(422)

        const count = yield* request("POST", "/flows/count", { body: { flows: { tags: { all_: ["even"] } } } })
        expect(count.body).toBe(4)
        expect((yield* request("POST", "/flows/count")).body).toBe(7)

        const page = yield* request("POST", "/flows/paginate", { body: { page: 2, limit: 3 } })
        expect(page.status).toBe(200)
        expect(page.body).toMatchObject({ count: 7, limit: 3, pages: 3, page: 2 })
        expect(page.body.results.map((f: any) => f.name)).toEqual(["f-epsilon", "f-eta", "f-gamma"])
        expect((yield* request("POST", "/flows/paginate", { body: { page: 0 } })).status).toBe(422)

        const deleted = yield* request("POST", "/flows/bulk_delete", { body: { flows: { tags: { all_: ["odd"] } }, limit: 1 } })
        expect(deleted.status).toBe(200)
        expect(deleted.body.deleted).toHaveLength(1)
        expect((yield* request("POST", "/flows/count")).body).toBe(6)
        const rest = yield* request("POST", "/flows/bulk_delete", { body: { flows: { tags: { all_: ["odd"] } } } })
        expect(rest.body.deleted).toHaveLength(1)
        expect((yield* request("POST", "/flows/bulk_delete", { body: { limit: 51 } })).status).toBe(422)
      })
    )
  })
})
