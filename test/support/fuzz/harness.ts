/**
 * The fuzz harness: objects to aim path parameters at, the cases of one operation, sending one case
 * and judging the answer (no 5xx, declared statuses with their declared bodies, and nothing stored
 * changed by a rejected request).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Either, Schema } from "effect"
import * as http from "node:http"
import { ok } from "../api.ts"
import { apiUrl, type Json, request } from "../server.ts"
import { queryPairs, wireSamples } from "./arbitraries.ts"
import { encodeComponent, hostileSegment, mutate, mutateQuery, type Query, type Random, seeded, toText } from "./mutations.ts"
import { type FuzzOperation, queryOf, takesBody } from "./operations.ts"

/** Literal segments that only say how the next parameter identifies its object. */
const QUALIFIERS = new Set(["name", "tag", "slug", "checksum"])

/**
 * What a path parameter names, as `context:param`: the nearest literal segment before it that is
 * not a qualifier. `/work_pools/:work_pool_name/queues/:name` → `work_pools:work_pool_name`, `queues:name`.
 */
export const parameterKey = (route: string, param: string): string => {
  const segments = route.split("/")
  const at = segments.findIndex((s) => s === `:${param}` || s === `:${param}?`)
  for (let i = at - 1; i >= 0; i--) {
    const segment = segments[i]!
    if (segment === "" || segment.startsWith(":") || QUALIFIERS.has(segment)) continue
    return `${segment}:${param}`
  }
  return `:${param}`
}

export type Targets = Record<string, Array<string>>

/**
 * One object of each kind, created through the Api, and the path parameter values that name them:
 * valid cases aim at these so that their handlers get past "not found".
 */
export const seedTargets = Effect.gen(function* () {
  const targets: Targets = {}
  // The values are read from the answers of the creates below: each must be a string to aim a path at.
  const add = (key: string, ...values: Array<Json | string>) => {
    for (const value of values) {
      if (typeof value !== "string") throw new Error(`${key}: ${JSON.stringify(value)} names no object`)
      ;(targets[key] ??= []).push(value)
    }
  }
  const post = (path: string, body: unknown, method = "POST") => Effect.map(request(method, path, { body }), (res) => ok(res))

  const flow = yield* post("/flows/", { name: "fuzz-flow" })
  add("flows:id", flow.id)
  add("flows:name", flow.name)
  yield* post("/work_pools/", { name: "fuzz-pool", type: "process" })
  add("work_pools:name", "fuzz-pool")
  add("work_pools:work_pool_name", "fuzz-pool")
  const queue = yield* post("/work_pools/fuzz-pool/queues", { name: "fuzz-queue" })
  add("queues:name", queue.name)
  add("work_queues:id", queue.id)
  add("work_queues:name", queue.name)
  yield* request("POST", "/work_pools/fuzz-pool/workers/heartbeat", { body: { name: "fuzz-worker" } })
  add("workers:name", "fuzz-worker")
  const deployment = yield* post("/deployments/", {
    name: "fuzz-deployment",
    flow_id: flow.id,
    work_pool_name: "fuzz-pool",
    work_queue_name: "fuzz-queue",
    parameter_openapi_schema: { type: "object", properties: { n: { type: "integer" } } },
    schedules: [{ schedule: { interval: 3600 } }]
  })
  add("deployments:id", deployment.id)
  add("deployments:flow_name", flow.name)
  add("deployments:deployment_name", deployment.name)
  add("schedules:schedule_id", deployment.schedules[0].id)
  add("related-to:resource_id", `prefect.deployment.${deployment.id}`)
  add("owned-by:resource_id", `prefect.deployment.${deployment.id}`)
  const run = yield* post(`/deployments/${deployment.id}/create_flow_run`, { state: { type: "RUNNING" } })
  add("flow_runs:id", run.id)
  add("task_runs:id", run.id)
  add("flow_run_states:id", run.state.id)
  yield* request("POST", `/flow_runs/${run.id}/input`, { body: { key: "fuzz-key", value: "\"v\"" } })
  add("input:key", "fuzz-key")
  const taskRun = yield* post("/task_runs/", { flow_run_id: run.id, task_key: "fuzz-task", dynamic_key: "0", state: { type: "RUNNING" } })
  add("task_runs:id", taskRun.id)
  add("task_run_states:id", taskRun.state.id)
  const limit = yield* post("/concurrency_limits/", { tag: "fuzz-tag", concurrency_limit: 5 })
  add("concurrency_limits:tag", "fuzz-tag")
  add("concurrency_limits:id", limit.id)
  const limitV2 = yield* post("/v2/concurrency_limits/", { name: "fuzz-limit", limit: 5 })
  add("concurrency_limits:id_or_name", limitV2.id, "fuzz-limit")
  const lease = yield* post("/v2/concurrency_limits/increment-with-lease", { names: ["fuzz-limit"], slots: 1, lease_duration: 600 })
  add("leases:lease_id", lease.lease_id)
  const variable = yield* post("/variables/", { name: "fuzz_variable", value: 1 })
  add("variables:id", variable.id)
  add("variables:name", variable.name)
  const search = yield* post("/saved_searches/", { name: "fuzz-search", filters: [] }, "PUT")
  add("saved_searches:id", search.id)
  const artifact = yield* post("/artifacts/", { key: "fuzz-artifact", type: "markdown", data: "# hi", flow_run_id: run.id })
  add("artifacts:id", artifact.id)
  add("artifacts:key", "fuzz-artifact")
  const blockType = yield* post("/block_types/", { name: "Fuzz Block", slug: "fuzz-block" })
  add("block_types:id", blockType.id)
  add("block_types:slug", "fuzz-block")
  const blockSchema = yield* post("/block_schemas/", {
    block_type_id: blockType.id,
    fields: { title: "Fuzz", type: "object", properties: { secret: { type: "string", format: "password" } } },
    capabilities: ["fuzz"]
  })
  add("block_schemas:id", blockSchema.id)
  add("block_schemas:checksum", blockSchema.checksum)
  const document = yield* post("/block_documents/", {
    name: "fuzz-document",
    block_type_id: blockType.id,
    block_schema_id: blockSchema.id,
    data: { secret: "hunter2" }
  })
  add("block_documents:id", document.id)
  add("block_documents:block_document_name", "fuzz-document")
  const automation = yield* post("/automations/", {
    name: "fuzz-automation",
    trigger: { posture: "Reactive", expect: ["fuzz.happened"] },
    actions: [{ type: "do-nothing" }]
  })
  add("automations:id", automation.id)
  add("views:view", "aggregate-worker-metadata")
  return targets
})

/** One request to send: what it is, where, and what. */
export interface FuzzCase {
  readonly operation: FuzzOperation
  /** "valid", or the mutation it carries. */
  readonly kind: string
  readonly path: string
  readonly query: Query
  readonly body: string | undefined
}

const hash = (text: string) => {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619)
  return h >>> 0
}

/** The cases of one operation: about 40% valid, the rest mutated, all from `seed` and its name. */
export const casesOf = (operation: FuzzOperation, targets: Targets, runs: number, seed: number): Array<FuzzCase> => {
  const random: Random = seeded(seed ^ hash(operation.name))
  const sampleSeed = random.int(2 ** 31)
  const valid = Math.max(1, Math.round(runs * 0.4))
  const querySchema = queryOf(operation)
  const pathSamples = operation.pathSchema ? wireSamples(operation.pathSchema, runs, sampleSeed) : []
  const querySamples = querySchema ? wireSamples(querySchema, runs, sampleSeed + 1) : []
  const bodySamples = takesBody(operation) ? wireSamples(operation.payloadSchema!, runs, sampleSeed + 2) : []

  const pathFor = (i: number, hostile: boolean) => {
    const hostileAt = hostile ? random.int(operation.params.length) : -1
    return operation.path.replace(/:([A-Za-z_]+)\??/g, (_, param: string) => {
      const index = operation.params.indexOf(param)
      if (index === hostileAt) return hostileSegment(random)
      const aimed = targets[parameterKey(operation.path, param)]
      const generated = (pathSamples[i % Math.max(1, pathSamples.length)] as Record<string, unknown> | undefined)?.[param]
      const value = aimed !== undefined && (random.next() < 0.85 || generated === undefined) ? random.pick(aimed) : String(generated ?? "x")
      return encodeComponent(value)
    })
  }

  /**
   * A worker's held poll answers when its wait ends (up to a minute): the fuzz run keeps waits
   * short, as it sends one request at a time.
   */
  const tame = (value: unknown): unknown => {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return value
    const body = value as Record<string, unknown>
    return typeof body.wait_seconds === "number" && body.wait_seconds > 0.2 ? { ...body, wait_seconds: 0.2 } : value
  }

  const cases: Array<FuzzCase> = []
  for (let i = 0; i < runs; i++) {
    const query = queryPairs(querySamples[i % Math.max(1, querySamples.length)])
    const body = takesBody(operation) ? tame(bodySamples[i % Math.max(1, bodySamples.length)] ?? {}) : undefined
    if (i < valid) {
      cases.push({ operation, kind: "valid", path: pathFor(i, false), query, body: body === undefined ? undefined : toText(body) })
      continue
    }
    // Mutate what the operation reads: its body mostly, else its query, else its path.
    const targetsOf = [...(body !== undefined ? ["body", "body", "body"] : []), ...(querySchema ? ["query"] : []), ...(operation.params.length ? ["path"] : [])]
    const target = targetsOf.length ? random.pick(targetsOf) : "query"
    if (target === "body") {
      const mutation = mutate(random, body, { textual: true })
      cases.push({ operation, kind: mutation.name, path: pathFor(i, false), query, body: mutation.text })
    } else if (target === "query") {
      const mutation = mutateQuery(random, query)
      cases.push({ operation, kind: mutation.name, path: pathFor(i, false), query: mutation.query, body: body === undefined ? undefined : toText(body) })
    } else {
      cases.push({ operation, kind: "path: hostile segment", path: pathFor(i, true), query, body: body === undefined ? undefined : toText(body) })
    }
  }
  return cases
}

export interface Answer {
  readonly status: number
  readonly text: string
}

const TIMEOUT_MS = 20_000

/**
 * Sends a case as a client would (JSON body, encoded path and query), each on a connection of its
 * own: client and server share this process, and a pause in it (generating the next operation's
 * cases) could send a request down a pooled connection in the instant the server closes it for
 * idleness: a reset that says nothing about the server.
 */
export const send = (fuzzCase: FuzzCase) =>
  Effect.flatMap(apiUrl, (base) =>
    Effect.async<Answer>((resume) => {
      const search = new URLSearchParams(fuzzCase.query as Array<[string, string]>).toString()
      const url = new URL(`${base}${fuzzCase.path}${search ? `?${search}` : ""}`)
      const body = fuzzCase.body === undefined ? undefined : Buffer.from(fuzzCase.body)
      // No answer at all (a reset connection, a hang) is as bad as a 500.
      const noAnswer = (why: string) => resume(Effect.succeed({ status: 599, text: `no answer: ${why}` }))
      const req = http.request(url, {
        method: fuzzCase.operation.method,
        agent: false,
        headers: body === undefined ? {} : { "content-type": "application/json", "content-length": String(body.length) }
      })
      req.setTimeout(TIMEOUT_MS, () => {
        req.destroy()
        noAnswer(`no response within ${TIMEOUT_MS} ms`)
      })
      req.on("response", (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (chunk) => (text += chunk))
        res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, text })))
        res.on("error", (error) => noAnswer(String(error)))
      })
      req.on("error", (error) => noAnswer(String(error)))
      req.end(body)
      return Effect.sync(() => req.destroy())
    })
  )

/**
 * What is wrong with an answer, if anything: a 5xx, an undeclared error status, or a body (of a
 * success or an error) not of its declared shape.
 */
export const judge = (fuzzCase: FuzzCase, answer: Answer): string | undefined => {
  if (answer.status >= 500) return `answered ${answer.status}`
  if (answer.status < 400) {
    // The body of a success is of the declared shape. Its status may be 200 or 201 whichever is
    // declared: creates answer 201 when they created and 200 when the object was there, as the
    // reference does under a document that declares one of the two.
    const declared = fuzzCase.operation.successes
    const schema = declared.get(answer.status) ?? (answer.status <= 201 ? [...declared.values()][0] : undefined)
    if (schema === undefined || answer.text === "") return undefined
    let body: unknown
    try {
      body = JSON.parse(answer.text)
    } catch {
      return undefined
    }
    const decoded = Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown>)(body)
    return Either.isLeft(decoded) ? `answered ${answer.status} with a body not of its declared shape: ${String(decoded.left).slice(0, 300)}` : undefined
  }
  const schema = fuzzCase.operation.errors.get(answer.status)
  if (schema === undefined) return `answered ${answer.status}, which the operation does not declare`
  let body: unknown
  try {
    body = JSON.parse(answer.text)
  } catch {
    return `answered ${answer.status} with a body that is not JSON`
  }
  const decoded = Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown>)(body)
  return Either.isLeft(decoded) ? `answered ${answer.status} with a body not of its declared shape` : undefined
}

/**
 * A fingerprint of every table's rows in one statement: how many there are and a sum over each
 * row version's place and creating transaction (ctid, xmin), which any committed insert, update or
 * delete changes. Cheaper than hashing the rows' text, so long runs over many rows stay fast. A
 * rejected request must leave every table's fingerprint as it was.
 *
 * The statement lives in a PL/pgSQL function, which plans it once per connection: planning a
 * query over every table cost most of each call (about 10 ms of the 12). The function is dropped
 * when the scope closes.
 */
export const tableFingerprints = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ name: string }>`
    SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`
  const perTable = tables.map(
    ({ name }) =>
      `SELECT '${name}'::text, count(*) || ':' || coalesce(sum(hashtext(t.ctid::text || ':' || t.xmin::text)::bigint), 0) FROM "${name}" t`
  )
  yield* Effect.acquireRelease(
    sql.unsafe(`CREATE OR REPLACE FUNCTION ${FINGERPRINT_FUNCTION}() RETURNS TABLE (name text, fingerprint text)
      LANGUAGE plpgsql AS $body$ BEGIN RETURN QUERY ${perTable.join(" UNION ALL ")}; END $body$`),
    () => Effect.orDie(sql.unsafe(`DROP FUNCTION IF EXISTS ${FINGERPRINT_FUNCTION}()`))
  )
  return Effect.map(
    sql.unsafe<{ name: string; fingerprint: string }>(`SELECT name, fingerprint FROM ${FINGERPRINT_FUNCTION}()`),
    (rows): Record<string, string> => Object.fromEntries(rows.map((row) => [row.name, row.fingerprint]))
  )
})

const FINGERPRINT_FUNCTION = "baton_fuzz_table_fingerprints"

/** The tables whose fingerprints differ. */
export const changedTables = (before: Record<string, string>, after: Record<string, string>) =>
  Object.keys(after).filter((table) => before[table] !== after[table])

/** A failing case as a line someone can read and replay. */
export const describeCase = (fuzzCase: FuzzCase, answer: Answer, problem: string) => {
  const search = new URLSearchParams(fuzzCase.query as Array<[string, string]>).toString()
  const cut = (text: string, n: number) => (text.length > n ? `${text.slice(0, n)}… (${text.length} chars)` : text)
  return [
    `${fuzzCase.operation.name} [${fuzzCase.kind}]: ${problem}`,
    `  ${fuzzCase.operation.method} ${cut(fuzzCase.path + (search ? `?${search}` : ""), 300)}`,
    ...(fuzzCase.body !== undefined ? [`  body: ${cut(fuzzCase.body, 400)}`] : []),
    `  answer: ${cut(answer.text, 400)}`
  ].join("\n")
}
