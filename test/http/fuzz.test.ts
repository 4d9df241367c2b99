/**
 * Fuzzing every operation of the Api (found by reflecting on it): valid requests generated from the
 * declared schemas and mutated invalid ones (wrong types, nulls, extra fields, huge strings, deep
 * nesting, odd unicode, negative and enormous numbers, malformed UUIDs and dates, broken JSON,
 * hostile path segments and query values). No answer may be a 5xx; every 4xx is a status the
 * operation declares, with its declared body; and a rejected request leaves every table as it was.
 *
 * The suite runs a few cases per operation from a fixed seed; `npm run fuzz` runs many (FUZZ_RUNS,
 * FUZZ_SEED, FUZZ_OP to pick operations by name, FUZZ_TRACE to print every case).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { request, testServer } from "../support/server.ts"
import { casesOf, changedTables, describeCase, judge, seedTargets, send, tableFingerprints } from "../support/fuzz/harness.ts"
import { operations } from "../support/fuzz/operations.ts"

/** A few cases per operation in the suite; many under `npm run fuzz`. */
const RUNS = Number(process.env.FUZZ_RUNS ?? (process.env.npm_lifecycle_event === "fuzz" ? 200 : 5))
const SEED = Number(process.env.FUZZ_SEED ?? 20261125)
const ONLY = process.env.FUZZ_OP
const TRACE = process.env.FUZZ_TRACE !== undefined

/** Operations that remove objects run last, so the others find the objects they aim at. */
const removes = (name: string, method: string) => method === "DELETE" || /bulk_delete|bulkDelete/i.test(name)

const chosen = operations
  .filter((operation) => ONLY === undefined || ONLY.split(",").some((part) => operation.name.includes(part)))
  .sort((a, b) => Number(removes(a.name, a.method)) - Number(removes(b.name, b.method)))

describe("fuzzing every operation", () => {
  // The server runs on the real clock, as in production: a held poll ends when its wait does.
  layer(testServer(), { excludeTestServices: true })((it) => {
    it("covers every operation of the Api", () => {
      if (ONLY === undefined) expect(chosen.length).toBeGreaterThanOrEqual(179)
    })

    it.scoped("sees a write in the table fingerprints, and no change from a refused request", () =>
      Effect.gen(function* () {
        const fingerprint = yield* tableFingerprints
        const before = yield* fingerprint
        expect((yield* request("POST", "/flows/", { body: { name: "fuzz-fingerprint" } })).status).toBe(201)
        const created = yield* fingerprint
        expect(changedTables(before, created)).toEqual(["flow"])
        expect((yield* request("PATCH", "/flows/00000000-0000-4000-8000-000000000000", { body: { tags: ["x"] } })).status).toBe(404)
        expect(changedTables(created, yield* fingerprint)).toEqual([])
        const flow = (yield* request("POST", "/flows/filter", { body: { flows: { name: { any_: ["fuzz-fingerprint"] } } } })).body[0]
        expect((yield* request("PATCH", `/flows/${flow.id}`, { body: { tags: ["x"] } })).status).toBe(204)
        expect(changedTables(created, yield* fingerprint)).toEqual(["flow"])
      })
    )

    it.scoped(`answers ${RUNS} generated requests per operation without a 5xx, an undeclared error or a change by a rejected one`, () =>
      Effect.gen(function* () {
        const targets = yield* seedTargets
        const fingerprint = yield* tableFingerprints
        let before = yield* fingerprint
        const problems: Array<string> = []
        const counts = { cases: 0, rejected: 0 }
        for (const operation of chosen) {
          for (const fuzzCase of casesOf(operation, targets, RUNS, SEED)) {
            const answer = yield* send(fuzzCase)
            counts.cases++
            if (TRACE) console.log(`${answer.status} ${fuzzCase.operation.name} [${fuzzCase.kind}] ${fuzzCase.path}`)
            const problem = judge(fuzzCase, answer)
            if (problem !== undefined) problems.push(describeCase(fuzzCase, answer, problem))
            const after = yield* fingerprint
            if (answer.status >= 400 && answer.status < 599) {
              counts.rejected++
              // A 423 records the denied slots on the limit, as the reference does; nothing else.
              const changed = changedTables(before, after).filter((table) => !(answer.status === 423 && table === "concurrency_limit_v2"))
              if (changed.length > 0) problems.push(describeCase(fuzzCase, answer, `rejected, yet changed ${changed.join(", ")}`))
            }
            before = after
          }
        }
        if (TRACE) console.log(`${counts.cases} cases, ${counts.rejected} rejected`)
        expect(counts.cases).toBeGreaterThanOrEqual(chosen.length * RUNS)
        expect(problems, problems.join("\n\n")).toEqual([])
      }),
      { timeout: 60 * 60_000 }
    )
  })
})
