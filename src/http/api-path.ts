/**
 * Baton's request path for the Api's endpoints.
 *
 * On the platform's way (`HttpApiBuilder.serve`), a request changed its fiber's context four times
 * before its group's handler changed it once more (the server's request, the request's scope, the
 * edge's request, the router's route), each an acquire-use-release of about twenty Effect
 * operations: `GET /version` cost about 200 operations and more than ten times the CPU of
 * node:http answering it.
 *
 * Here a request for one of the Api's endpoints runs as one fiber whose context holds, from the
 * start, the request as the Api reads it (./edge.ts's `present`), its route, its query and, when
 * its handler may use one (a group made with the platform's group, not `apiGroup`), its scope, and
 * nothing else: the middlewares and the handlers hold what they use. It goes through the same
 * steps as on the platform's way, in the same order, made of the same parts: the edge's `admit`
 * and `around`, the Api's middlewares (as they are registered), the route's own decoding and
 * handler, and the Api's encoding of its errors. Requests are routed by the same router
 * (find-my-way, over the same routes), so a request reaches the handler it reached before. A
 * client that goes away interrupts its request's fiber, unless its route is uninterruptible. A
 * request's body is read from node's message once, into one buffer (`bodyText`), where the
 * platform reads it through an Effect stream with a fiber and a cache of its own: about a tenth
 * of the server's CPU a run lifecycle (docs/performance.md, "Ninth round").
 *
 * Everything else stays on the platform's way: what the edge serves outside the Api (the UI), the
 * routes that are not the Api's endpoints (docs, metrics, websockets), CORS preflights, and every
 * request while requests are logged (DEBUG) or traced.
 */
import {
  Cookies,
  HttpApi,
  HttpApiBuilder,
  type HttpApiGroup,
  type HttpApp,
  HttpRouter,
  HttpServerError,
  HttpServerRequest,
  HttpServerRespondable,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServer, NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Context, Deferred, Effect, Either, Option, Runtime, Scope } from "effect"
import * as FindMyWay from "find-my-way-ts"
import { IncomingMessage, ServerResponse } from "node:http"
import { Socket } from "node:net"
import { Readable } from "node:stream"
import type { EdgeSteps } from "./edge.ts"
import { Settings } from "../settings/settings.ts"
import { endpointHandlersOf, readsSettingsOnly } from "./group.ts"
import { NodeServer, serveInFront } from "./node-server.ts"
import { readBody } from "./limits.ts"
import { safeCause } from "./log-safe.ts"
import { pathnameOf } from "./paths.ts"

const INTERNAL_ERROR = JSON.stringify({ exception_message: "Internal Server Error" })

/** platform-node's request over node's IncomingMessage, as its server makes it. */
type NodeRequestClass = new (source: IncomingMessage, response: ServerResponse) => HttpServerRequest.HttpServerRequest

/**
 * The class of platform-node's requests (not exported): taken from the one request its handler
 * makes here, and checked to read node's message as it does. Undefined when it does not (another
 * version): the platform's way then serves every request.
 */
export const nodeRequestClass: Effect.Effect<NodeRequestClass | undefined> = Effect.gen(function* () {
  const made = yield* Deferred.make<HttpServerRequest.HttpServerRequest>()
  const handler = yield* NodeHttpServer.makeHandler(
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => Effect.as(Deferred.succeed(made, request), HttpServerResponse.empty()))
  )
  const probe = () => {
    const message = new IncomingMessage(new Socket())
    message.method = "GET"
    message.url = "/probe?a=1"
    message.headers = { "x-probe": "1" }
    return message
  }
  const first = probe()
  handler(first, new ServerResponse(first))
  const request = yield* Deferred.await(made)
  const Class = request.constructor as NodeRequestClass
  const second = probe()
  const again = new Class(second, new ServerResponse(second))
  const reads = NodeHttpServerRequest.toIncomingMessage(again) === second && again.url === "/probe?a=1" &&
    again.method === "GET" && again.headers["x-probe"] === "1"
  return reads ? Class : undefined
})

/**
 * The field platform-node's request keeps its body's text in (an Effect made on first use), when a
 * request of `Class` (and one it modifies) reads it from there: then a request's body is read
 * through `bodyText`, not through the platform's way, which reads it through an Effect stream behind
 * a fiber and a cache made per request (see this module's header).
 */
const TEXT_FIELD = "textEffect"
export const keepsTextIn = (Class: NodeRequestClass): boolean => {
  const message = new IncomingMessage(new Socket())
  message.method = "POST"
  message.url = "/probe"
  const request = new Class(message, new ServerResponse(message)).modify({ url: "/probe2" })
  if (!Object.hasOwn(request, TEXT_FIELD)) return false
  const marker = Effect.succeed("probe")
  ;(request as unknown as Record<string, unknown>)[TEXT_FIELD] = marker
  return request.text === marker
}

/** The body of `message` as text, read once (by whichever reads it first), for `request`'s errors. */
const bodyText = (request: HttpServerRequest.HttpServerRequest, message: IncomingMessage): Effect.Effect<string, HttpServerError.RequestError> => {
  let read: Promise<string> | undefined
  // No limit here: the edge refused a body announced larger than the limit, and read a chunked one.
  const start = () =>
    read ??= new Promise<string>((resolve, reject) =>
      void readBody(message, Infinity, Either.match({ onLeft: reject, onRight: (body) => resolve(Option.getOrThrow(body).toString("utf8")) })))
  return Effect.tryPromise({ try: start, catch: (cause) => new HttpServerError.RequestError({ request, reason: "Decode", cause }) })
}

/** Writes `response` to node's response: at once for a body in memory, through the web's stream otherwise. */
const write = (
  request: HttpServerRequest.HttpServerRequest,
  to: ServerResponse,
  response: HttpServerResponse.HttpServerResponse,
  runtime: Runtime.Runtime<never>
): Effect.Effect<void> => {
  if (to.writableEnded) return Effect.void
  let headers: Record<string, string | Array<string>> = response.headers
  if (!Cookies.isEmpty(response.cookies)) {
    const cookies = Cookies.toSetCookieHeaders(response.cookies)
    if (headers["set-cookie"] !== undefined) cookies.push(headers["set-cookie"] as string)
    headers = { ...headers, "set-cookie": cookies }
  }
  const body = response.body
  const inMemory = request.method === "HEAD" || body._tag === "Empty" ? "" :
    body._tag === "Uint8Array" ? body.body :
    body._tag === "Raw" && (typeof body.body === "string" || body.body instanceof Uint8Array) ? body.body :
    undefined
  if (inMemory !== undefined) {
    to.writeHead(response.status, headers)
    if (inMemory === "") to.end()
    else to.end(inMemory)
    return Effect.void
  }
  return Effect.async<void>((resume) => {
    const web = HttpServerResponse.toWeb(response, { runtime })
    const webHeaders: Record<string, string | Array<string>> = {}
    web.headers.forEach((value, name) => {
      webHeaders[name] = name === "set-cookie" ? web.headers.getSetCookie() : value
    })
    to.writeHead(web.status, webHeaders)
    if (web.body === null) {
      to.end()
      return resume(Effect.void)
    }
    const stream = Readable.fromWeb(web.body as import("node:stream/web").ReadableStream)
    let resumed = false
    const done = () => {
      if (resumed) return
      resumed = true
      resume(Effect.void)
    }
    stream.on("error", (error) => {
      to.destroy(error)
      done()
    })
    to.once("close", done)
    stream.pipe(to)
    return Effect.sync(() => stream.destroy())
  })
}

/** A route of the Api's, ready to run: its handler inside the Api's middlewares. */
interface Served {
  readonly route: HttpRouter.Route<unknown, unknown>
  readonly app: Effect.Effect<HttpServerResponse.HttpServerResponse>
  /** Whether its handler may acquire in the request's scope (one made with the platform's group). */
  readonly needsScope: boolean
}

const serving = (
  route: HttpRouter.Route<unknown, unknown>,
  api: (app: HttpApp.Default<unknown>) => HttpApp.Default<unknown>,
  needsScope: boolean,
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown> | undefined
): Served => {
  // A client that goes away interrupts its request (the platform's way interrupts the route's
  // handler; here the whole fiber, with nothing left to answer), unless the route says otherwise.
  const respond = Effect.flatMap(handler ?? route.handler, HttpServerRespondable.toResponse) as HttpApp.Default<unknown>
  return {
    route,
    app: api(route.uninterruptible ? Effect.uninterruptible(respond) : respond) as Effect.Effect<HttpServerResponse.HttpServerResponse>,
    needsScope
  }
}

export interface ApiPathOptions {
  /** The router the Api's groups (and the docs, metrics and websockets) registered their routes in. */
  readonly router: HttpRouter.HttpRouter<unknown, unknown>
  /** Whether a route is one of the Api's endpoints (not docs, metrics or a websocket). */
  readonly isEndpoint: (route: HttpRouter.Route<unknown, unknown>) => boolean
  /**
   * Whether an endpoint's handler may acquire in the request's scope: not one of a group made with
   * `apiGroup` (./group.ts), whose handlers cannot.
   */
  readonly needsScope: (route: HttpRouter.Route<unknown, unknown>) => boolean
  /**
   * An endpoint's handler without its group's context (./endpoint-route.ts), for the endpoints of
   * `apiGroup`'s groups; undefined runs the route's own.
   */
  readonly endpointHandler: (route: HttpRouter.Route<unknown, unknown>) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown> | undefined
  /** What every request's context holds besides the request itself: the settings those handlers read. */
  readonly requestContext: ReadonlyMap<string, unknown>
  /** The Api's middlewares and its encoding of errors, around a route's handler. */
  readonly api: (app: HttpApp.Default<unknown>) => HttpApp.Default<unknown>
  readonly edge: EdgeSteps
  /** What requests run with (the server's context). */
  readonly runtime: Runtime.Runtime<never>
}

/**
 * A handler for node's "request" event that serves the requests for the Api's endpoints (true) and
 * leaves the others to the platform (false). Undefined when this version of platform-node makes its
 * requests differently (./api-path.ts's `nodeRequestClass`).
 */
export const apiPath = (options: ApiPathOptions) =>
  Effect.map(nodeRequestClass, (NodeRequest) => {
    if (NodeRequest === undefined) return undefined
    const { edge, runtime } = options
    const ownBodyText = keepsTextIn(NodeRequest)
    // Every route, as the platform's router holds them, so that a path finds the route it finds
    // there; only the Api's endpoints have a handler here.
    const router = FindMyWay.make<Served | undefined>()
    for (const route of options.router.routes) {
      const served = options.isEndpoint(route)
        ? serving(route, options.api, options.needsScope(route), options.endpointHandler(route))
        : undefined
      if (route.method === "*") router.all(route.path, served)
      else router.on(route.method, route.path, served)
    }
    const mounts = Array.from(options.router.mounts, ([path]) => path)

    return (message: IncomingMessage, response: ServerResponse): boolean => {
      const method = message.method
      const url = message.url
      if (method === undefined || url === undefined || method === "OPTIONS") return false
      if (edge.outside.first(method, pathnameOf(url)) !== undefined) return false
      const target = edge.target(url)
      if (target === undefined) return false
      if (mounts.length > 0) {
        const pathname = pathnameOf(target)
        if (mounts.some((path) => pathname === path || pathname.startsWith(path + "/"))) return false
      }
      const found = router.find(method, target) ?? (method === "HEAD" ? router.find("GET", target) : undefined)
      if (found === undefined || found.handler === undefined) return false
      const route = found.handler
      const original = new NodeRequest(message, response)
      const shown = edge.present(original, target)
      const request = shown.request
      if (ownBodyText) (request as unknown as Record<string, unknown>)[TEXT_FIELD] = bodyText(request, message)
      // The steps read only the request, its route, its query and (when made) its scope from the fiber's
      // context: the middlewares and the handlers hold what they use (each group's handlers their
      // group's context).
      const context = new Map<string, unknown>(options.requestContext)
      context.set(HttpServerRequest.HttpServerRequest.key, request)
      context.set(HttpServerRequest.ParsedSearchParams.key, found.searchParams)
      context.set(HttpRouter.RouteContext.key, {
        [HttpRouter.RouteContextTypeId]: HttpRouter.RouteContextTypeId,
        route: route.route,
        params: found.params
      })
      const served = edge.around(
        Effect.flatMap(edge.admit(request, shown.emptyObject), (admitted) =>
          Either.isLeft(admitted)
            ? Effect.succeed(admitted.left)
            : admitted.right === request
            ? route.app
            : Effect.provideService(route.app, HttpServerRequest.HttpServerRequest, admitted.right)),
        original
      )
      const answered = Effect.flatMap(served, (answer) => write(request, response, answer, runtime)).pipe(
        // The steps answer every failure but an interruption; what fails after them (node refusing
        // the answer's headers, say) is logged here, and answered by the observer below.
        Effect.tapErrorCause((cause) =>
          Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError("Unexpected failure while answering a request", safeCause(cause)))
      )
      // The request's own scope, as on the platform's way: what a handler acquires in it is released
      // once its answer is written (without it, a handler would get its group's scope, which lasts
      // as long as the server). Made in the fiber and put in this request's own context, which
      // nothing has read yet. None for a handler that cannot use it (about 12 Effect operations).
      const program = !route.needsScope ? answered : Effect.flatMap(Scope.make(), (scope) => {
        context.set(Scope.Scope.key, scope)
        return Effect.onExit(answered, (exit) => Scope.close(scope, exit))
      })
      // Node's request event is where a request's fiber starts, as in the platform's handler.
      const fiber = Runtime.runFork(
        Runtime.make({ context: Context.unsafeMake(context), fiberRefs: runtime.fiberRefs, runtimeFlags: runtime.runtimeFlags }),
        program
      )
      response.on("close", () => {
        if (!response.writableEnded) fiber.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
      })
      // A request is never left without an answer: 500, or the connection closed when the answer
      // had begun.
      fiber.addObserver(() => {
        if (response.writableEnded || response.destroyed) return
        if (response.headersSent) return void response.destroy()
        response.writeHead(500, { "content-type": "application/json", "content-length": Buffer.byteLength(INTERNAL_ERROR) })
        response.end(INTERNAL_ERROR)
      })
      return true
    }
  })


/**
 * Serves the Api's endpoints of `api` through this path, in front of the platform's handler of the
 * node server (when there is one: a server made by ./node-server.ts). Built where the platform's
 * way is built (inside `HttpApiBuilder`'s router and middlewares), so both serve the same routes
 * with the same middlewares.
 */
export const serveApiInFront = (api: HttpApi.HttpApi.Any, edge: EdgeSteps) =>
  Effect.gen(function* () {
    const server = yield* Effect.serviceOption(NodeServer)
    if (Option.isNone(server)) return
    const router = yield* HttpApiBuilder.Router.router
    const middleware = yield* Effect.flatMap(HttpApiBuilder.Middleware, (m) => m.retrieve)
    const { context } = yield* HttpApi.Api
    // The Api's errors encoded as the platform's way encodes them (with the Api's context).
    const encodeErrors = yield* Effect.provide(HttpApiBuilder.buildMiddleware(api as HttpApi.HttpApi.AnyWithProps), context)
    const endpoints = new Set<string>()
    const scopeless = new Set<string>()
    HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
      onGroup: () => {},
      onEndpoint: ({ endpoint, group }) => {
        const key = `${endpoint.method} ${endpoint.path}`
        endpoints.add(key)
        if (readsSettingsOnly(group as unknown as HttpApiGroup.HttpApiGroup.Any)) scopeless.add(key)
      }
    })
    const runtime = yield* Effect.runtime<never>()
    const settings = yield* Settings
    const handlers = endpointHandlersOf(yield* HttpApiBuilder.Router)
    const handler = yield* apiPath({
      router: router as HttpRouter.HttpRouter<unknown, unknown>,
      isEndpoint: (route) => endpoints.has(`${route.method} ${route.path}`),
      needsScope: (route) => !scopeless.has(`${route.method} ${route.path}`),
      endpointHandler: (route) => handlers.get(`${route.method} ${route.path}`),
      requestContext: new Map([[Settings.key, settings]]),
      api: (app) => encodeErrors(middleware(app as HttpApp.Default) as Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>),
      edge,
      runtime
    })
    serveInFront(server.value, handler)
  })
