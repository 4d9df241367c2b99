import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { Flow } from "../../src/flows/schemas.ts"
import { okAs, once } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const createFlow = (body: Record<string, unknown>) => Effect.map(request("POST", "/flows/", { body }), (res) => okAs(Flow, res))
const filter = (body: unknown) => request("POST", "/flows/filter", { body })
const names = (body: unknown) => Effect.map(filter(body), (res) => res.body.map((f) => f.name))

/** The flows f-alpha … f-eta, a second apart; even ones tagged even and x, f-beta untagged, the other odd ones odd. The only flows of the server. */
const seed = once(
  Effect.gen(function* () {
    const flows: Array<typeof Flow.Encoded> = []
    for (const [i, name] of ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"].entries()) {
      flows.push(yield* createFlow({ name: `f-${name}`, tags: i % 2 === 0 ? ["even", "x"] : i === 1 ? [] : ["odd"] }))
      // The server's clock is the test's: one second between creations orders them.
      yield* TestClock.adjust("1 second")
    }
    return flows.map((flow) => flow.id)
  })
)

describe("flows filter, count, paginate and bulk delete", () => {
  it.layer(testServer({ overrides: { "server.api.default_limit": 5 } }), { timeout: 60_000 })((it) => {
    it.effect("filter answers the flows by name, up to the default limit", () =>
      Effect.gen(function* () {
        yield* seed
        const all = yield* filter({})
        expect(all.status).toBe(200)
        expect(all.body.map((f) => f.name)).toEqual(["f-alpha", "f-beta", "f-delta", "f-epsilon", "f-eta"])
      }))

    const filters: Array<readonly [string, (ids: ReadonlyArray<string>) => Record<string, unknown>, Array<string>]> = [
      ["by any of some ids", (ids) => ({ flows: { id: { any_: [ids[0], ids[2]] } } }), ["f-alpha", "f-gamma"]],
      ["by none of some ids, up to a limit", (ids) => ({ flows: { id: { not_any_: [ids[0]] } }, limit: 2 }), ["f-beta", "f-delta"]],
      ["by a name like, in any case", () => ({ flows: { name: { like_: "ET" } } }), ["f-beta", "f-eta", "f-zeta"]],
      ["by any of some names", () => ({ flows: { name: { any_: ["f-zeta", "f-nope"] } } }), ["f-zeta"]],
      ["by all of some tags", () => ({ flows: { tags: { all_: ["even", "x"] } } }), ["f-alpha", "f-epsilon", "f-eta", "f-gamma"]],
      ["by having no tags", () => ({ flows: { tags: { is_null_: true } } }), ["f-beta"]],
      ["with criteria joined by or_", () => ({ flows: { operator: "or_", name: { any_: ["f-beta"] }, tags: { all_: ["odd"] } } }), ["f-beta", "f-delta", "f-zeta"]],
      ["with criteria joined by and_", () => ({ flows: { operator: "and_", name: { any_: ["f-beta"] }, tags: { all_: ["odd"] } } }), []],
      ["sorted by name descending", () => ({ sort: "NAME_DESC", limit: 3 }), ["f-zeta", "f-gamma", "f-eta"]],
      ["sorted newest first", () => ({ sort: "CREATED_DESC", limit: 2 }), ["f-eta", "f-zeta"]],
      ["from an offset", () => ({ offset: 5 }), ["f-gamma", "f-zeta"]]
    ]
    for (const [title, body, expected] of filters) {
      it.effect(`filter ${title}`, () => Effect.gen(function* () {
        expect(yield* names(body(yield* seed))).toEqual(expected)
      }))
    }

    it.effect("filter refuses a limit above the default limit (422)", () =>
      Effect.gen(function* () {
        const tooMany = yield* filter({ limit: 6 })
        expect(tooMany.status).toBe(422)
        expect(tooMany.body).toEqual({ detail: "Invalid limit: must be less than or equal to 5." })
      }))

    it.effect("filter refuses a sort, an operator and a criterion there are not, and a negative offset (422)", () =>
      Effect.gen(function* () {
        const badSort = yield* filter({ sort: "SIZE_ASC" })
        expect(badSort.status).toBe(422)
        expect(badSort.body.detail[0]).toMatchObject({ loc: ["body", "sort"], type: "enum" })
        expect((yield* filter({ flows: { operator: "xor_" } })).body.detail[0]).toMatchObject({ loc: ["body", "flows", "operator"] })
        const unknownCriterion = yield* filter({ flows: { colour: { any_: ["red"] } } })
        expect(unknownCriterion.body.detail[0]).toMatchObject({ loc: ["body", "flows", "colour"], type: "extra_forbidden" })
        expect((yield* filter({ offset: -1 })).status).toBe(422)
      }))

    it.effect("count counts the matching flows, or all of them without a body", () =>
      Effect.gen(function* () {
        yield* seed
        expect((yield* request("POST", "/flows/count", { body: { flows: { tags: { all_: ["even"] } } } })).body).toBe(4)
        expect((yield* request("POST", "/flows/count")).body).toBe(7)
      }))

    it.effect("paginate answers a page of flows with the count, limit, pages and page; page 0 is 422", () =>
      Effect.gen(function* () {
        yield* seed
        const page = yield* request("POST", "/flows/paginate", { body: { page: 2, limit: 3 } })
        expect(page.status).toBe(200)
        expect(page.body).toMatchObject({ count: 7, limit: 3, pages: 3, page: 2 })
        expect(page.body.results.map((f) => f.name)).toEqual(["f-epsilon", "f-eta", "f-gamma"])
        expect((yield* request("POST", "/flows/paginate", { body: { page: 0 } })).status).toBe(422)
      }))

    // Last: it deletes the odd flows the tests above read.
    it.effect("bulk_delete deletes the matching flows, at most its limit; a limit above 50 is 422", () =>
      Effect.gen(function* () {
        yield* seed
        const deleted = yield* request("POST", "/flows/bulk_delete", { body: { flows: { tags: { all_: ["odd"] } }, limit: 1 } })
        expect(deleted.status).toBe(200)
        expect(deleted.body.deleted).toHaveLength(1)
        expect((yield* request("POST", "/flows/count")).body).toBe(6)
        const rest = yield* request("POST", "/flows/bulk_delete", { body: { flows: { tags: { all_: ["odd"] } } } })
        expect(rest.body.deleted).toHaveLength(1)
        expect((yield* request("POST", "/flows/bulk_delete", { body: { limit: 51 } })).status).toBe(422)
      }))
  })
})
