/**
 * With an auth string set, every operation of the Api, found by reflecting on the Api itself (so an
 * operation added later is covered without touching this file), answers 401 to a request without
 * the credential, except the probes the reference leaves open; with the credential, none does.
 */
import { HttpApi } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { BatonApi } from "../../src/api.ts"
import { request, testServer } from "../support/server.ts"

const AUTH = "operator:correct horse battery staple"
const authorized = { authorization: `Basic ${Buffer.from(AUTH).toString("base64")}` }

/** A value a path parameter of this name accepts (or at least one that reaches its route). */
const valueFor = (name: string): string => {
  if (name === "id" || name.endsWith("_id") || name === "id_or_name") return "0b6f3a52-1c7e-4d35-9a4e-6f1d2c3b4a59"
  if (name === "checksum") return "sha256:0000"
  return `probe-${name.replace(/_/g, "-")}`
}

interface Operation {
  readonly name: string
  readonly method: string
  readonly path: string
}

const operations: Array<Operation> = []
HttpApi.reflect(BatonApi, {
  onGroup: () => {},
  onEndpoint: ({ endpoint, group }) => {
    const path = endpoint.path.replace(/:([A-Za-z_]+)\??/g, (_, name: string) => encodeURIComponent(valueFor(name)))
    operations.push({ name: `${group.identifier}.${endpoint.name}`, method: endpoint.method, path })
  }
})

/** What the reference answers without credentials: its health and readiness probes. */
const OPEN = ["GET /health", "GET /ready"]

const send = (operation: Operation, headers: Record<string, string> = {}) =>
  request(operation.method, operation.path, {
    headers,
    ...(["POST", "PUT", "PATCH"].includes(operation.method) ? { body: {} } : {})
  })

describe("every operation behind server.api.auth_string", () => {
  it.layer(testServer({ overrides: { "server.api.auth_string": AUTH } }), { timeout: 120_000 })((it) => {
    it("finds every operation of the Api", () => {
      expect(operations.length).toBeGreaterThanOrEqual(179)
      expect(new Set(operations.map((o) => `${o.method} ${o.path}`)).size).toBe(operations.length)
    })

    it.effect("answers 401 to each one without the credential, except the open probes", () =>
      Effect.gen(function* () {
        const open: Array<string> = []
        const wrong: Array<string> = []
        for (const operation of operations) {
          const res = yield* send(operation)
          if (res.status === 401) {
            expect(res.body, operation.name).toEqual({ detail: "Unauthorized" })
            continue
          }
          const line = `${operation.method} ${operation.path}`
          if (OPEN.includes(line)) open.push(line)
          else wrong.push(`${line} (${operation.name}) → ${res.status}`)
        }
        expect(wrong).toEqual([])
        expect(open.sort()).toEqual([...OPEN].sort())
      })
    )

    it.effect("answers each one with something else than 401 given the credential", () =>
      Effect.gen(function* () {
        const refused: Array<string> = []
        for (const operation of operations) {
          const res = yield* send(operation, authorized)
          if (res.status === 401) refused.push(`${operation.method} ${operation.path} (${operation.name})`)
          // Bad input is never a 500, with or without credentials.
          expect(res.status, `${operation.method} ${operation.path}: ${res.text}`).toBeLessThan(500)
        }
        expect(refused).toEqual([])
      })
    )
  })
})
