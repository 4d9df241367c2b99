/**
 * An area's group of the Api, as `HttpApiBuilder.group` makes it, with its handlers running in the
 * request's context and the settings, nothing else.
 *
 * The platform's group runs each handler with the context its group was built in merged into the
 * request's: a new context of every service in that build (about 25), made on every request. A
 * group made here hands its `build` every service it reads while it is built, and keeps only the
 * settings for its handlers, so that merge is of the request's few services and one. A handler that
 * reads another service when it runs does not type-check here: read it in `build` instead.
 */
import { type HttpApi, HttpApiBuilder, type HttpApiEndpoint, type HttpApiGroup, type HttpServerResponse } from "@effect/platform"
import { Chunk, Context, Effect, Layer } from "effect"
import { Settings } from "../settings/settings.ts"
import { endpointHandler } from "./endpoint-route.ts"

/**
 * The groups whose handlers a server has registered through `apiGroup`: their handlers cannot
 * acquire anything in a request's scope (a handler reading `Scope` does not type-check), so Baton's
 * request path makes none for their endpoints (./api-path.ts).
 */
const registeredHere = new WeakSet<HttpApiGroup.HttpApiGroup.Any>()

/** Whether `group`'s handlers were registered through `apiGroup` (they read nothing but the settings when they run). */
export const readsSettingsOnly = (group: HttpApiGroup.HttpApiGroup.Any): boolean => registeredHere.has(group)

type EndpointHandler = Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown>

/**
 * The endpoints of `apiGroup`'s groups as Baton's request path runs them (./endpoint-route.ts), by
 * `METHOD path`, for each Api router they were registered in (a server's build has one: the
 * handlers hold that build's services).
 */
const endpointHandlers = new WeakMap<object, Map<string, EndpointHandler>>()

/** The endpoint handlers registered through `apiGroup` in `router` (the platform's Api router service). */
export const endpointHandlersOf = (router: object): ReadonlyMap<string, EndpointHandler> =>
  endpointHandlers.get(router) ?? new Map()

/** Keeps the handlers `build` made for the request path, in the Api router of this build. */
const keepHandlers = (router: object, group: HttpApiGroup.HttpApiGroup.AnyWithProps, handlers: unknown) => {
  let kept = endpointHandlers.get(router)
  if (kept === undefined) endpointHandlers.set(router, kept = new Map())
  for (const item of Chunk.toReadonlyArray((handlers as HttpApiBuilder.Handlers.Any & { handlers: Chunk.Chunk<HttpApiBuilder.Handlers.Item<unknown, unknown>> }).handlers)) {
    const handler = endpointHandler(group, item)
    const endpoint = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
    if (handler !== undefined) kept.set(`${endpoint.method} ${endpoint.path}`, handler)
  }
}

/** What a group's handlers read when they run, from what its `build` returns (its handlers, or an effect making them). */
type HandlersContext<A> = A extends HttpApiBuilder.Handlers<infer _E, infer _P, infer R, infer _N> ? R
  : A extends Effect.Effect<HttpApiBuilder.Handlers<infer _E, infer _P, infer R, infer _N>, infer _EX, infer _RX> ? R
  : never

/** The platform's checks of a `build` result, and that its handlers read nothing but the settings when they run. */
type Validate<A> = [Exclude<HandlersContext<A>, Settings>] extends [never] ? HttpApiBuilder.Handlers.ValidateReturn<A>
  : `A handler reads a service when it runs: read it in build instead`

/** What a group's `build` result reads while the group is built. */
type BuildContext<A> = A extends Effect.Effect<infer _H, infer _E, infer R> ? R : never

export const apiGroup = <
  ApiId extends string,
  Groups extends HttpApiGroup.HttpApiGroup.Any,
  ApiError,
  ApiR,
  const Name extends HttpApiGroup.HttpApiGroup.Name<Groups>,
  Return
>(
  api: HttpApi.HttpApi<ApiId, Groups, ApiError, ApiR>,
  groupName: Name,
  build: (
    handlers: HttpApiBuilder.Handlers.FromGroup<ApiError, ApiR, HttpApiGroup.HttpApiGroup.WithName<Groups, Name>>
  ) => Validate<Return>
): Layer.Layer<HttpApiGroup.ApiGroup<ApiId, Name>, HttpApiBuilder.Handlers.Error<Return>, BuildContext<Return> | Settings> =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const context = yield* Effect.context<BuildContext<Return> | Settings>()
      // Built in a context of its own, with this build's memo map (so the same router): the
      // context the platform's group keeps for its handlers is the settings (and its router).
      const memoMap = yield* Layer.CurrentMemoMap
      const scope = yield* Effect.scope
      const router = Context.get(yield* Layer.buildWithMemoMap(HttpApiBuilder.Router.Live, memoMap, scope), HttpApiBuilder.Router)
      const apiGroupDef = api.groups[groupName] as unknown as HttpApiGroup.HttpApiGroup.AnyWithProps
      const group = HttpApiBuilder.group(api, groupName, (handlers) => {
        const built = build(handlers) as unknown
        if (!Effect.isEffect(built)) {
          keepHandlers(router, apiGroupDef, built)
          return built as never
        }
        return Effect.tap(Effect.provide(built, context), (made) => keepHandlers(router, apiGroupDef, made)) as never
      })
      const settings = Context.make(Settings, Context.get(context, Settings))
      yield* Effect.mapInputContext(Layer.buildWithMemoMap(group, memoMap, scope), () => settings)
      registeredHere.add(apiGroupDef)
    })
  ) as never
