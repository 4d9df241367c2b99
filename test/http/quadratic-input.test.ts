/**
 * Long runs of one character where the server trimmed with `/x+$/`: a backtracking engine tries every
 * start of the run, so 100,000 characters took 7 to 15 s with the process blocked. Each answers at
 * once now, and /health answers after.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { trim, trimEnd } from "../../src/domain/strings.ts"
import { request, testServer } from "../support/server.ts"
import { stillServing, within } from "../support/timing.ts"

const RUN = 100_000

const fast = within(3000)

describe("trimming", () => {
  it("takes the characters off the ends only, in linear time", () => {
    expect(trimEnd("/v2/api//", "/")).toBe("/v2/api")
    expect(trimEnd("///", "/")).toBe("")
    expect(trim(`'" name "'`, `'" `)).toBe("name")
    expect(trim("'a'b'", "'")).toBe("a'b")
    const started = performance.now()
    expect(trimEnd(`${"/".repeat(RUN)}x`, "/")).toHaveLength(RUN + 1)
    expect(trim(`a${" ".repeat(RUN)}x`, " ")).toHaveLength(RUN + 2)
    expect(performance.now() - started).toBeLessThan(100)
  })
})

describe("long runs in requests", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("a work pool name, a schema's $ref and required name, and a url answer at once", () =>
      Effect.gen(function* () {
        const name = yield* fast(request("POST", "/work_pools/", { body: { name: `a${" ".repeat(RUN)}x`, type: "process" } }))
        expect(name.status).toBeLessThan(500)
        expect((yield* fast(request("POST", "/work_pools/", { body: { name: ` '"${" ".repeat(RUN)}"' `, type: "process" } }))).status).toBe(422)

        const ref = yield* fast(request("POST", "/ui/schemas/validate", { body: { schema: { $ref: `x${"#".repeat(RUN)}\nx` }, values: {} } }))
        expect(ref.status).toBe(422)
        const property = `a${"'".repeat(RUN)}b`
        const required = yield* fast(
          request("POST", "/ui/schemas/validate", { body: { schema: { type: "object", properties: {}, required: [property] }, values: {} } })
        )
        expect(required.status).toBe(200)
        expect(required.body.valid).toBe(false)
        // The reference names the property by the message's first word, quotes stripped: Python quotes
        // this name with double quotes, which stay.
        expect(required.body.errors[0].property).toBe(`"${property}"`)

        // Node refuses a request line past its header limit (16 KB) before Baton sees it.
        const url = yield* fast(request("GET", `/${"/".repeat(15_000)}x/`))
        expect(url.status).toBeLessThan(500)
        yield* stillServing
      }))
  })
})
