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
 * Serves `api` under the base path, and `outside` beside it; every answer goes to `record` when
 * there is one (metrics on), and is logged at DEBUG when `logsRequests` (the logger's level is
 * DEBUG or lower: otherwise timing and annotating each request would be work for nothing).
 */
export const edge = (
  settings: SettingsValue,
  outside: Outside = nothingOutside,
  record?: RequestRecorder,
  logsRequests = true
) => {
  const basePath = normalizeBasePath(settings.server.api.base_path)
  const cors = corsMiddleware(settings.server.api)
  const refusedWithoutCredential = basicAuth(settings)
  const limit = bodyLimit(settings)
  return <E>(api: HttpApp.Default<E>): HttpApp.Default<never> => {
    const routed = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const pathname = pathnameOf(request.url)
      const first = outside.first(request.method, pathname)
      if (first !== undefined) return first
      const below = stripBasePath(request.url, basePath)
      if (below === undefined) return yield* outside.serve(request, pathname)
      const url = stripTrailingSlash(below)
      // Answers given here get the CORS headers on their way out like the Api's (cors.ts marks
      // every response), so a UI on another origin can read a 401 or a 413.
      const unauthorized = refusedWithoutCredential(request, url)
      if (unauthorized !== undefined) return unauthorized
      const shown = presented(request, url)
      const checked = yield* limit.check(shown.request)
      if (Either.isLeft(checked)) return checked.left
      const body = shown.emptyObject ? withBody(checked.right, EMPTY_OBJECT) : checked.right
      return yield* Effect.provideService(api, HttpServerRequest.HttpServerRequest, body)
    })
    const guarded = routed.pipe(
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
    return record === undefined ? served : recorded(served, record)
  }
}

/**
 * Every answer, recorded. The time is the process's monotonic clock rather than Effect's: it
 * measures how long the request took and decides nothing.
 */
const recorded = <E, R>(app: HttpApp.Default<E, R>, record: RequestRecorder): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const started = performance.now()
    return Effect.map(app, (response) => {
      record(request, response.status, started)
      return response
    })
  })

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
