/**
 * A small group served beside the real Api in the HTTP tests: endpoints with a body, path ids,
 * other path parameters and query parameters, so the shared error mechanism is exercised exactly
 * as every area's endpoints will use it.
 */
import { HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Schema } from "effect"
import { BatonApi } from "../../src/api.ts"
import { Conflict, NotFound } from "../../src/domain/errors.ts"
import { GroupsLive } from "../../src/server.ts"

const Item = Schema.Struct({
  name: Schema.String,
  paused: Schema.Boolean,
  count: Schema.optional(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0))),
  tags: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  note: Schema.optional(Schema.NullOr(Schema.String))
})

export class ProbeApi extends HttpApiGroup.make("probe")
  .add(
    HttpApiEndpoint.post("create", "/probe/items")
      .setPayload(Item.annotations({ parseOptions: { onExcessProperty: "error" } }))
      .addSuccess(Item, { status: 201 })
  )
  .add(
    HttpApiEndpoint.get("read", "/probe/items/:id")
      .setPath(Schema.Struct({ id: Schema.UUID }))
      .addSuccess(Schema.Struct({ id: Schema.UUID }))
  )
  .add(
    HttpApiEndpoint.get("kind", "/probe/kinds/:kind")
      .setPath(Schema.Struct({ kind: Schema.Literal("day", "week") }))
      .addSuccess(Schema.String)
  )
  .add(
    HttpApiEndpoint.get("search", "/probe/search")
      .setUrlParams(Schema.Struct({ limit: Schema.NumberFromString.pipe(Schema.int(), Schema.greaterThan(0)) }))
      .addSuccess(Schema.Number)
  )
  .add(
    HttpApiEndpoint.post("filter", "/probe/filter")
      .setPayload(Schema.Struct({ offset: Schema.optionalWith(Schema.Int.pipe(Schema.greaterThanOrEqualTo(0)), { default: () => 0 }) }))
      .addSuccess(Schema.Number)
  )
  .add(HttpApiEndpoint.post("conflict", "/probe/conflict").addSuccess(Schema.Void))
  .add(HttpApiEndpoint.get("boom", "/probe/boom").addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("missing", "/probe/missing/:id").setPath(Schema.Struct({ id: Schema.UUID })))
  .add(HttpApiEndpoint.get("parameters", "/probe/parameters").setUrlParams(Schema.Struct({ n: Schema.NumberFromString })).addSuccess(Schema.Number))
  .add(HttpApiEndpoint.get("badHeader", "/probe/bad-header").addSuccess(Schema.String))
  .add(HttpApiEndpoint.get("scoped", "/probe/scoped").addSuccess(Schema.Number))
  .add(
    HttpApiEndpoint.get("slow", "/probe/slow")
      .setUrlParams(Schema.Struct({ ms: Schema.NumberFromString }))
      .addSuccess(Schema.String)
  )
{}

export const ProbedApi = BatonApi.add(ProbeApi)

/** What GET /probe/scoped acquired, and what of it was released. */
export const scopedUses = { acquired: 0, released: 0 }

const ProbeLive = HttpApiBuilder.group(ProbedApi, "probe", (handlers) =>
  handlers
    .handle("create", ({ payload }) => Effect.succeed(payload))
    .handle("read", ({ path }) => Effect.succeed({ id: path.id }))
    .handle("kind", ({ path }) => Effect.succeed(path.kind))
    .handle("search", ({ urlParams }) => Effect.succeed(urlParams.limit))
    .handle("filter", ({ payload }) => Effect.succeed(payload.offset))
    .handle("conflict", () => Effect.fail(new Conflict({ detail: "Object already exists" })))
    .handle("boom", () => Effect.die(new Error("a bug")))
    .handle("missing", () => Effect.fail(new NotFound({ detail: "Item not found" })))
    .handle("slow", ({ urlParams }) => Effect.as(Effect.sleep(urlParams.ms), "done"))
    // Acquires in the request's scope: released once the answer is written.
    .handle("scoped", () => Effect.as(Effect.acquireRelease(Effect.sync(() => void scopedUses.acquired++), () => Effect.sync(() => void scopedUses.released++)), 1))
    // An answer node refuses to send (a header value with a line break).
    .handleRaw("badHeader", () => Effect.succeed(HttpServerResponse.text("never sent", { headers: { "x-bad": "a\nb" } })))
    // A statement with `n` parameters, as a handler whose values all became parameters would send.
    .handle("parameters", ({ urlParams }) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.orDie(sql<{ n: number }>`SELECT count(*)::int AS n WHERE 0 IN ${sql.in(Array.from({ length: urlParams.n }, (_, i) => i))}`)
      ).pipe(Effect.map((rows) => rows[0]!.n))
    )
)

export const ProbedHandlers = HttpApiBuilder.api(ProbedApi).pipe(Layer.provide([GroupsLive, ProbeLive]))
