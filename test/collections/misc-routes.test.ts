import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ok } from "../support/api.ts"
import { request, testServer } from "../support/server.ts"

const validate = (body: string, contentType = "text/plain") =>
  request("POST", "/templates/validate", { body, headers: { "content-type": contentType } })

describe("collections, templates and CSRF tokens when protection is off", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.effect("serves the worker metadata and the system blocks' metadata from bundled data", () =>
      Effect.gen(function* () {
        const workers = ok(yield* request("GET", "/collections/views/aggregate-worker-metadata"), 200)
        const process = workers.prefect.process
        expect(process).toMatchObject({ type: "process", display_name: "Process", is_beta: false })
        expect(Object.keys(process.default_base_job_configuration.job_configuration).sort()).toEqual(
          ["command", "env", "labels", "name", "stream_output", "working_dir"]
        )
        expect(process.default_base_job_configuration.variables.properties.stream_output.default).toBe(true)
        // The process template is accepted as a work pool's base job template.
        const pool = yield* request("POST", "/work_pools/", {
          body: { name: "from-metadata", type: "process", base_job_template: process.default_base_job_configuration }
        })
        expect(pool.status).toBe(201)

        const blocks = ok(yield* request("GET", "/collections/views/aggregate-block-metadata"), 200)
        expect(blocks.prefect.block_types.secret.block_schema.checksum).toMatch(/^sha256:[0-9a-f]{64}$/)
        expect(blocks.prefect.block_types["slack-webhook"].block_schema.capabilities).toEqual(["notify"])

        expect((yield* request("GET", "/collections/views/invalid")).body).toEqual({ detail: "View invalid not found in registry" })
        const missing = yield* request("GET", "/collections/views/aggregate-flow-metadata")
        expect(missing.status).toBe(404)
        expect(missing.body).toEqual({ detail: "Requested content missing for view aggregate-flow-metadata" })
      })
    )

    it.effect("validates templates: 204 when they parse, 422 with the line and message when not", () =>
      Effect.gen(function* () {
        const good = yield* validate("\n        {{ hello }} world!\n        ")
        expect(good.status).toBe(204)
        expect(good.text).toBe("")
        expect((yield* validate(JSON.stringify("Hello {{ flow.name | upper }}"), "application/json")).status).toBe(204)
        expect((yield* request("POST", "/templates/validate")).status).toBe(204)

        const source = "1 - {{ hello }} world!\n2 - oops, this {{ ain't } gonna work\n3 - this is fine"
        const bad = yield* validate(source)
        expect(bad.status).toBe(422)
        expect(bad.headers.get("content-type")).toContain("application/json")
        expect(bad.body.error).toMatchObject({ line: 2, source })
        expect(bad.body.error.message).toEqual(expect.any(String))
        expect((yield* validate("{% if x %}")).body.error.line).toBe(1)

        const nested = "{% for a in range(100) %}{% for b in range(100) %}{% for c in range(100) %}{% endfor %}{% endfor %}{% endfor %}"
        expect((yield* validate(nested)).body).toEqual({
          error: {
            line: 0,
            message: "Contains nested for loops at a depth of 3. Templates can nest for loops no more than 2 loops deep.",
            source: nested
          }
        })
        const many = "{% for a in b %}{% endfor %}".repeat(11)
        expect((yield* validate(many)).body.error.message).toBe("Contains 11 for loops. Templates can contain no more than 10 for loops.")
        expect((yield* validate("{% for a in b %}{% endfor %}".repeat(10))).status).toBe(204)
        expect((yield* validate("123", "application/json")).status).toBe(422)
      })
    )

    it.effect("answers 422 for a CSRF token while protection is off, and lets writes through without one", () =>
      Effect.gen(function* () {
        const res = yield* request("GET", "/csrf-token?client=abc")
        expect(res.status).toBe(422)
        expect(res.body).toEqual({ detail: "CSRF protection is disabled." })
        expect((yield* request("POST", "/flows/", { body: { name: "no-csrf" } })).status).toBe(201)
      })
    )
  })
})
