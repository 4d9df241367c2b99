import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { request, testServer } from "../support/server.ts"

const BROWSER_HEADERS = "authorization,prefect-csrf-token,prefect-csrf-client"

const preflight = (path: string, origin: string, method: string, headers?: string) =>
  request("OPTIONS", path, {
    headers: {
      origin,
      "access-control-request-method": method,
      ...(headers !== undefined ? { "access-control-request-headers": headers } : {})
    }
  })

describe("CORS with the default settings (* for origins, methods and headers)", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("allows a preflight asking for the credential and CSRF headers, on any path", () =>
      Effect.gen(function* () {
        for (const path of ["/flows/filter", "/flows/", "/no/such/route"]) {
          const res = yield* preflight(path, "http://ui.example", "POST", `content-type,${BROWSER_HEADERS}`)
          expect(res.status, path).toBe(200)
          expect(res.text, path).toBe("OK")
          expect(res.headers.get("access-control-allow-origin"), path).toBe("*")
          expect(res.headers.get("access-control-allow-headers"), path).toBe(`content-type,${BROWSER_HEADERS}`)
          expect(res.headers.get("access-control-allow-methods"), path).toBe("DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT")
          expect(res.headers.get("access-control-max-age"), path).toBe("600")
        }
      })
    )

    it.effect("leaves an OPTIONS that is no preflight to the API (405), and requests without Origin unmarked", () =>
      Effect.gen(function* () {
        const plain = yield* request("OPTIONS", "/flows/filter")
        expect(plain.status).toBe(405)
        expect(plain.body).toEqual({ detail: "Method Not Allowed" })
        const noOrigin = yield* request("GET", "/version")
        expect(noOrigin.headers.get("access-control-allow-origin")).toBeNull()
      })
    )

    it.effect("names the origin instead of * for a request with cookies", () =>
      Effect.gen(function* () {
        for (const path of ["/health", "/version"]) {
          const res = yield* request("GET", path, { headers: { origin: "http://ui.example", cookie: "a=b" } })
          expect(res.status, path).toBe(200)
          expect(res.headers.get("access-control-allow-origin"), path).toBe("http://ui.example")
          expect(res.headers.get("vary"), path).toContain("Origin")
        }
      })
    )

    it.effect("marks error answers too, each a JSON body with detail", () =>
      Effect.gen(function* () {
        const cases: Array<[string, string, number]> = [
          ["GET", "/no/such/route", 404],
          ["DELETE", "/health", 405],
          ["GET", `/flows/not-a-uuid`, 404],
          ["POST", "/flows/", 422]
        ]
        for (const [method, path, status] of cases) {
          const res = yield* request(method, path, { headers: { origin: "http://ui.example" }, ...(method === "POST" ? { body: {} } : {}) })
          expect(res.status, `${method} ${path}`).toBe(status)
          expect(res.headers.get("content-type"), `${method} ${path}`).toContain("application/json")
          expect(res.body.detail, `${method} ${path}`).toBeDefined()
          expect(res.headers.get("access-control-allow-origin"), `${method} ${path}`).toBe("*")
        }
        const outside = yield* request("GET", "/elsewhere", { fromRoot: true, headers: { origin: "http://ui.example" } })
        expect(outside.status).toBe(404)
        expect(outside.body).toEqual({ detail: "Not Found" })
        expect(outside.headers.get("access-control-allow-origin")).toBe("*")
      })
    )
  })
})
