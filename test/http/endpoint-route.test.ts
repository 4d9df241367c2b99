import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpRouter,
  HttpServer,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Exit, Layer, Schema } from "effect"
import { endpointHandler } from "../../src/http/endpoint-route.ts"

const Item = Schema.Struct({ name: Schema.String, size: Schema.Number })

const Api = HttpApi.make("test").add(
  HttpApiGroup.make("items")
    .add(
      HttpApiEndpoint.post("create", "/items/:id")
        .setPath(Schema.Struct({ id: Schema.UUID }))
        .setPayload(Item)
        .addSuccess(Schema.Struct({ id: Schema.String, name: Schema.String, size: Schema.Number }), { status: 201 })
    )
    .add(
      HttpApiEndpoint.get("list", "/items")
        .setUrlParams(Schema.Struct({ tag: Schema.Array(Schema.String), limit: Schema.NumberFromString }))
        .addSuccess(Schema.Struct({ tags: Schema.Array(Schema.String), limit: Schema.Number }))
    )
    .add(HttpApiEndpoint.get("raw", "/raw").addSuccess(Schema.String))
    .add(HttpApiEndpoint.del("remove", "/items/:id").setPath(Schema.Struct({ id: Schema.UUID })))
)

class Guard extends HttpApiMiddleware.Tag<Guard>()("test/Guard") {}

const Guarded = HttpApi.make("guarded").add(
  HttpApiGroup.make("files")
    .add(HttpApiEndpoint.get("plain", "/plain").addSuccess(Schema.String))
    .add(HttpApiEndpoint.get("guarded", "/guarded").addSuccess(Schema.String).middleware(Guard))
    .add(HttpApiEndpoint.post("upload", "/upload").setPayload(HttpApiSchema.Multipart(Schema.Struct({}))))
)

/** The group's handlers, as the platform's group hands them (kept here), served by the platform. */
const served = Effect.gen(function* () {
  let kept: HttpApiBuilder.Handlers.Any | undefined
  const ItemsLive = HttpApiBuilder.group(Api, "items", (handlers) => {
    const made = handlers
      .handle("create", ({ path, payload }) => Effect.succeed({ id: path.id, ...payload }))
      .handle("list", ({ urlParams }) => Effect.succeed({ tags: [...urlParams.tag], limit: urlParams.limit }))
      .handle("raw", () => Effect.succeed(HttpServerResponse.text("as it is", { status: 202 })))
      .handle("remove", () => Effect.void)
    kept = made
    return made
  })
  const { handler, dispose } = HttpApiBuilder.toWebHandler(
    Layer.mergeAll(HttpApiBuilder.api(Api).pipe(Layer.provide(ItemsLive)), HttpServer.layerContext)
  )
  yield* Effect.addFinalizer(() => Effect.promise(dispose))
  // The first request builds the group (and keeps its handlers).
  yield* Effect.promise(() => handler(new Request("http://localhost/raw")))
  const items = Chunk.toReadonlyArray((kept as unknown as { handlers: Chunk.Chunk<HttpApiBuilder.Handlers.Item<unknown, unknown>> }).handlers)
  return { platform: handler, items }
})

interface Answer {
  readonly status: number
  readonly body: unknown
}

const answerOf = async (response: Response): Promise<Answer> => {
  const text = await response.text()
  return { status: response.status, body: text === "" ? null : text.startsWith("{") || text.startsWith("[") || text.startsWith("\"") ? JSON.parse(text) : text }
}

/** What the endpoint handler answers `request` (route `path` with `params`): its response, or its failure as the platform encodes it. */
const direct = (
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown>,
  request: Request,
  params: Record<string, string>
) =>
  Effect.gen(function* () {
    const url = new URL(request.url)
    const search: Record<string, string | Array<string>> = {}
    for (const [key, value] of url.searchParams) {
      const previous = search[key]
      search[key] = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value]
    }
    const context = Context.empty().pipe(
      Context.add(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(request)),
      Context.add(HttpRouter.RouteContext, { [HttpRouter.RouteContextTypeId]: HttpRouter.RouteContextTypeId, route: undefined as never, params }),
      Context.add(HttpServerRequest.ParsedSearchParams, search)
    )
    const exit = yield* Effect.exit(Effect.provide(handler, context as Context.Context<unknown>))
    if (Exit.isSuccess(exit)) return yield* Effect.promise(() => answerOf(HttpServerResponse.toWeb(exit.value)))
    const error = exit.cause._tag === "Fail" ? exit.cause.error as { _tag: string; issues: unknown; message: string } : undefined
    expect(error?._tag).toBe("HttpApiDecodeError")
    return { status: 400, body: { _tag: error!._tag, issues: error!.issues, message: error!.message } }
  })

const ID = "0190a3b2-7c1d-7e2f-8a3b-4c5d6e7f8a9b"

describe("an endpoint run without its group's context (endpoint-route.ts)", () => {
  it.scoped("answers every request as the platform's route does: decoded path, payload and query, encoded success, refused input", () =>
    Effect.gen(function* () {
      const { platform, items } = yield* served
      const handlers = new Map(items.map((item) => [item.endpoint.name, endpointHandler(Api.groups.items as never, item)!]))
      expect([...handlers.values()].every((handler) => handler !== undefined)).toBe(true)
      const cases: Array<[string, () => Request, Record<string, string>]> = [
        ["create", () => new Request(`http://localhost/items/${ID}`, { method: "POST", body: JSON.stringify({ name: "a", size: 2 }), headers: { "content-type": "application/json" } }), { id: ID }],
        ["create", () => new Request("http://localhost/items/not-a-uuid", { method: "POST", body: JSON.stringify({ name: "a", size: 2 }), headers: { "content-type": "application/json" } }), { id: "not-a-uuid" }],
        ["create", () => new Request(`http://localhost/items/${ID}`, { method: "POST", body: JSON.stringify({ name: 1 }), headers: { "content-type": "application/json" } }), { id: ID }],
        ["list", () => new Request("http://localhost/items?tag=x&limit=3"), {}],
        ["list", () => new Request("http://localhost/items?tag=x&tag=y&limit=3"), {}],
        ["list", () => new Request("http://localhost/items?tag=x&limit=many"), {}],
        ["raw", () => new Request("http://localhost/raw"), {}],
        ["remove", () => new Request(`http://localhost/items/${ID}`, { method: "DELETE" }), { id: ID }]
      ]
      const answers: Array<Answer> = []
      for (const [name, make, params] of cases) {
        const byPlatform = yield* Effect.promise(() => platform(make()).then(answerOf))
        const here = yield* direct(handlers.get(name)!, make(), params)
        expect(here).toEqual(byPlatform)
        answers.push(here)
      }
      expect(answers.map((answer) => answer.status)).toEqual([201, 400, 400, 200, 200, 400, 202, 204])
      expect(answers[0]!.body).toEqual({ id: ID, name: "a", size: 2 })
      expect(answers[3]!.body).toEqual({ tags: ["x"], limit: 3 })
      expect(answers[6]!.body).toBe("as it is")
    }))

  it("leaves to the platform an endpoint with middleware of its own, or a multipart payload", () => {
    const group = Guarded.groups.files as unknown as HttpApiGroup.HttpApiGroup.AnyWithProps
    const item = (name: string) => ({
      endpoint: group.endpoints[name]!,
      handler: () => Effect.succeed("ok"),
      withFullRequest: false,
      uninterruptible: false
    })
    expect(endpointHandler(group, item("plain"))).toBeDefined()
    expect(endpointHandler(group, item("guarded"))).toBeUndefined()
    expect(endpointHandler(group, item("upload"))).toBeUndefined()
  })
})
