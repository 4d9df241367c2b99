import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BatonApi } from "../../src/api.ts"
import { matchRoute, pathParams, routesOf } from "../../src/http/routes.ts"
import { request, testServer } from "../support/server.ts"

const ID = "5b1e4c9e-7f0a-4b8e-9c1d-2f3a4b5c6d7e"
const notAllowed = { detail: "Method Not Allowed" }

/** The methods an `Allow` header names. */
const allowOf = (headers: Headers) => (headers.get("allow") ?? "").split(",").map((m) => m.trim()).filter((m) => m !== "").sort()

describe("routing as the reference's router routes", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("answers a path only another method's route takes with 405 and Allow, an id route taking only UUIDs", () =>
      Effect.gen(function* () {
        const cases: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
          // `filter` and `count` are no ids: only the POST routes take these paths.
          ["GET", "/flows/filter", ["POST"]],
          ["DELETE", "/flows/filter", ["POST"]],
          ["GET", "/flows/count", ["POST"]],
          ["GET", "/flow_runs/filter", ["POST"]],
          ["PATCH", "/task_runs/count", ["POST"]],
          ["GET", `/deployments/${ID}/create_flow_run`, ["POST"]],
          ["PUT", `/flows/${ID}`, ["DELETE", "GET", "PATCH"]],
          // `name` is no deployment id, so the schedule route does not take it; the by-name read does.
          ["PATCH", `/deployments/name/schedules/${ID}`, ["GET"]]
        ]
        for (const [method, path, allowed] of cases) {
          const res = yield* request(method, path)
          expect([method, path, res.status, res.body]).toEqual([method, path, 405, notAllowed])
          expect(allowOf(res.headers)).toEqual(allowed)
        }
      })
    )

    it.effect("answers a path no route takes with 404, and routes a UUID in any case", () =>
      Effect.gen(function* () {
        for (const path of ["/flows/not-a-uuid", `/flows/${ID}x`, "/flow_runs/filter/more"]) {
          const res = yield* request("GET", path)
          expect([path, res.status, res.body]).toEqual([path, 404, { detail: "Not Found" }])
          expect(res.headers.get("allow")).toBeNull()
        }
        // The id route takes an upper-case UUID: the flow's own 404.
        const upper = yield* request("GET", `/flows/${ID.toUpperCase()}`)
        expect(upper.status).toBe(404)
        expect(upper.body).toEqual({ detail: "Flow not found" })
      })
    )

    it.effect("routes a name, slug or key parameter whatever its text, to the route's own answer", () =>
      Effect.gen(function* () {
        // GET /work_pools/{name} takes `filter` as a name, as the reference's does.
        const pool = yield* request("GET", "/work_pools/filter")
        expect(pool.status).toBe(404)
        expect(pool.body.detail).not.toBe("Not Found")
        const limit = yield* request("GET", "/v2/concurrency_limits/filter")
        expect(limit.status).toBe(404)
        expect(limit.body.detail).not.toBe("Not Found")
      })
    )

    it.effect("validates a lease id the renew route takes as any segment: 422 uuid_parsing at path lease_id", () =>
      Effect.gen(function* () {
        const res = yield* request("POST", "/v2/concurrency_limits/leases/not-a-uuid/renew", { body: {} })
        expect(res.status).toBe(422)
        expect(res.body.detail).toEqual([
          expect.objectContaining({ loc: ["path", "lease_id"], type: "uuid_parsing", input: "not-a-uuid" })
        ])
        // The path's problem comes first, then the body's, as the reference lists them.
        const both = yield* request("POST", "/v2/concurrency_limits/leases/not-a-uuid/renew", { body: { lease_duration: "x" } })
        expect(both.status).toBe(422)
        expect(both.body.detail.map((item) => item.loc)).toEqual([["path", "lease_id"], ["body", "lease_duration"]])
        // Another method on that path is still a 405.
        const get = yield* request("GET", "/v2/concurrency_limits/leases/not-a-uuid/renew")
        expect(get.status).toBe(405)
        expect(allowOf(get.headers)).toEqual(["POST"])
      })
    )
  })
})

describe("a request's route among the Api's routes (routes.ts)", () => {
  it("is the first route of its method, in the Api's order, that takes its path, whatever path it is", () => {
    const routes = routesOf(BatonApi)
    /** What the routes answer tried one by one, every route of the method. */
    const everyRoute = (method: string, pathname: string) => {
      for (const route of routes) {
        if (route.method !== method) continue
        if (pathParams(route, pathname) !== undefined) return route
      }
      return undefined
    }
    const paths = new Set<string>(["/", "/version", "/flows/", "/flows", "/flows/filter", "/no/such/path", "/flows//x", `/${ID}/x`])
    for (const route of routes) {
      const path = route.endpoint.path
      paths.add(path.replace(/:[^/]+/g, ID))
      paths.add(path.replace(/:[^/]+/g, "name"))
      paths.add(path.replace(/:[^/]+/g, "a%20b"))
      paths.add(`${path.replace(/:[^/]+/g, ID)}/extra`)
    }
    let matched = 0
    for (const method of ["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD"]) {
      for (const pathname of paths) {
        const expected = everyRoute(method, pathname)
        const found = matchRoute(routes, method, pathname)
        expect([method, pathname, found?.route.endpoint.path]).toEqual([method, pathname, expected?.endpoint.path])
        if (found !== undefined) matched++
      }
    }
    // Every route takes its own path with UUIDs for parameters.
    expect(matched).toBeGreaterThanOrEqual(routes.length)
  })
})
