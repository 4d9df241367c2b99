/**
 * What every request goes through before the Api sees it: CORS, the base path, the shared
 * credential (./auth.ts), the body limit (./limits.ts), trailing slashes, empty bodies, request
 * logging, the request metrics (./metrics.ts) and the last-resort answer for an unexpected failure.
 * Outside the base path: what the server hands in (the UIs, /ui-settings, a page for a browser at /
 * without a UI), else a JSON 404.
 */
import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Duration, Effect, Either, Option } from "effect"
import type { SettingsValue } from "../settings/settings.ts"
import { basicAuth } from "./auth.ts"
import { corsMiddleware } from "./cors.ts"
import { announcesBody, isJsonMediaType, mediaTypeOf } from "./content-type.ts"
import { bodyLimit, withBody } from "./limits.ts"
import { safeCause } from "./log-safe.ts"
import type { RequestRecorder } from "./metrics.ts"
import { normalizeBasePath, pathnameOf, stripBasePath, stripTrailingSlash } from "./paths.ts"
import { notFound } from "./responses.ts"
import { unavailableAnswerForCause } from "./unavailable.ts"

export { normalizeBasePath, stripBasePath, stripTrailingSlash } from "./paths.ts"

/**
 * The request as the Api decodes it. A JSON body of a structured type (`application/merge-patch+json`)
 * is presented as `application/json`, the one the platform reads as JSON. The reference treats a
 * missing body as an empty one when every body field is optional (filters, counts): a POST, PUT or
 * PATCH without a body, and without a Content-Type or with a JSON one, is presented as the JSON `{}`.
 * Other Content-Types are left as they are, for the Api to refuse (./content-type.ts).
 */
const presented = (request: HttpServerRequest.HttpServerRequest, url: string) => {
  const type = mediaTypeOf(request.headers["content-type"])
  const json = type === undefined || isJsonMediaType(type)
  const writes = request.method === "POST" || request.method === "PUT" || request.method === "PATCH"
  const emptyObject = json && writes && !announcesBody(request.headers)
  const renamed = emptyObject || (json && type !== undefined && type !== "application/json")
  const headers = renamed ? { ...request.headers, "content-type": "application/json" } : undefined
  return { request: request.modify(headers === undefined ? { url } : { url, headers }), emptyObject }
}

const EMPTY_OBJECT = Buffer.from("{}")

const internalError = HttpServerResponse.unsafeJson({ exception_message: "Internal Server Error" }, { status: 500 })

/**
 * What the server answers besides the Api (a UI and its /ui-settings), handed to the edge by the
 * server so that this kit knows no area.
 */
export interface Outside {
  /** The answer for a path wherever it is (/ui-settings answers beside the base path too), if any. */
  readonly first: (method: string, pathname: string) => HttpServerResponse.HttpServerResponse | undefined
  /** The answer for a path outside the base path. */
  readonly serve: (
    request: HttpServerRequest.HttpServerRequest,
    pathname: string
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
}

/** Nothing besides the Api: a JSON 404 outside the base path. */
export const nothingOutside: Outside = { first: () => undefined, serve: () => Effect.succeed(notFound) }

/**
 * The edge's steps, for the two ways a request is served: the platform's router (`edge` below) and
 * Baton's own request path for the Api's endpoints (./api-path.ts), which takes the same steps.
 * Every answer goes to `record` when there is one (metrics on), and is logged at DEBUG when
 * `logsRequests` (the logger's level is DEBUG or lower: otherwise timing and annotating each
 * request would be work for nothing).
 */
export const edgeSteps = (
  settings: SettingsValue,
  outside: Outside = nothingOutside,
  record?: RequestRecorder,
  logsRequests = true
) => {
  const basePath = normalizeBasePath(settings.server.api.base_path)
  const cors = corsMiddleware(settings.server.api)
  const refusedWithoutCredential = basicAuth(settings)
  const limit = bodyLimit(settings)
  /**
   * The url the Api serves a request for `url` at (below the base path, without a trailing slash),
   * or undefined outside the base path. What `outside.first` answers is answered before.
   */
  const target = (url: string): string | undefined => {
    const below = stripBasePath(url, basePath)
    return below === undefined ? undefined : stripTrailingSlash(below)
  }
  /**
   * The request as the Api reads it, or the answer it gets instead (401, 413, 400): `request` is
   * the one `present` made. Answers given here get the CORS headers on their way out like the
   * Api's (cors.ts marks every response), so a UI on another origin can read a 401 or a 413.
   */
  const admit = (
    request: HttpServerRequest.HttpServerRequest,
    emptyObject: boolean
  ): Effect.Effect<Either.Either<HttpServerRequest.HttpServerRequest, HttpServerResponse.HttpServerResponse>> => {
    const unauthorized = refusedWithoutCredential(request, request.url)
    if (unauthorized !== undefined) return Effect.succeed(Either.left(unauthorized))
    return Effect.map(limit.check(request), (checked) =>
      emptyObject && Either.isRight(checked) ? Either.right(withBody(checked.right, EMPTY_OBJECT)) : checked)
  }
  /**
   * What every answer goes through: CORS, the last-resort answer for an unexpected failure, the
   * request log at DEBUG and the metrics (of `original`, the request as it came: its url names the
   * route).
   */
  const around = <E>(app: HttpApp.Default<E>, original?: HttpServerRequest.HttpServerRequest): HttpApp.Default<never> => {
    const guarded = app.pipe(
      Effect.catchAllCause((cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        // The platform fails with a ready answer of its own in some cases (499 for a client that
        // went away, as a failure or a defect): that answer stands and is no unexpected failure.
        const ready = Option.orElse(Cause.failureOption(cause), () => Cause.dieOption(cause))
        if (Option.isSome(ready) && HttpServerResponse.isServerResponse(ready.value)) {
          return Effect.succeed(ready.value)
        }
        // Outside the Api's own mapping too (a middleware's statement), an unavailable database is a 503.
        const unavailable = unavailableAnswerForCause(settings, cause)
        if (Option.isSome(unavailable)) return unavailable.value
        return Effect.as(Effect.logError("Unexpected failure while handling a request", safeCause(cause)), internalError)
      })
    )
    const served = logsRequests ? logRequests(cors(guarded)) : cors(guarded)
    return record === undefined ? served : recorded(served, record, original)
  }
  return { outside, target, present: presented, admit, around } as const
}

export type EdgeSteps = ReturnType<typeof edgeSteps>

/** Serves `api` under the base path, and what `steps` were given to serve outside it beside it. */
export const edge = (steps: EdgeSteps) => {
  const outside = steps.outside
  return <E>(api: HttpApp.Default<E>): HttpApp.Default<never> => {
    const routed = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const pathname = pathnameOf(request.url)
      const first = outside.first(request.method, pathname)
      if (first !== undefined) return first
      const target = steps.target(request.url)
      if (target === undefined) return yield* outside.serve(request, pathname)
      const shown = presented(request, target)
      const admitted = yield* steps.admit(shown.request, shown.emptyObject)
      if (Either.isLeft(admitted)) return admitted.left
      return yield* Effect.provideService(api, HttpServerRequest.HttpServerRequest, admitted.right)
    })
    return steps.around(routed)
  }
}

/**
 * Every answer, recorded. The time is the process's monotonic clock rather than Effect's: it
 * measures how long the request took and decides nothing.
 */
const recorded = <E, R>(
  app: HttpApp.Default<E, R>,
  record: RequestRecorder,
  original: HttpServerRequest.HttpServerRequest | undefined
): HttpApp.Default<E, R> => {
  const time = (request: HttpServerRequest.HttpServerRequest) => {
    const started = performance.now()
    return Effect.map(app, (response) => {
      record(request, response.status, started)
      return response
    })
  }
  return original === undefined ? Effect.flatMap(HttpServerRequest.HttpServerRequest, time) : Effect.suspend(() => time(original))
}

const logRequests = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const [elapsed, response] = yield* Effect.timed(app)
    yield* Effect.logDebug("request").pipe(
      Effect.annotateLogs({
        method: request.method,
        path: request.url,
        status: response.status,
        duration_ms: Math.round(Duration.toMillis(elapsed) * 100) / 100
      })
    )
    return response
  })
