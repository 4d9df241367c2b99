/**
 * What every request goes through before the Api sees it: CORS, the base path, trailing slashes,
 * empty bodies, request logging and the last-resort answer for an unexpected failure.
 */
import { type HttpApp, HttpMiddleware, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Duration, Effect, Option } from "effect"
import type { SettingsValue } from "../settings/settings.ts"
import { unavailableAnswerForCause } from "./unavailable.ts"

const list = (value: string): ReadonlyArray<string> =>
  value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")

/** "*" means any: an empty list makes the CORS middleware answer with a wildcard or echo the request. */
const corsList = (value: string): ReadonlyArray<string> => (value.trim() === "*" ? [] : list(value))

export const corsMiddleware = (api: SettingsValue["server"]["api"]) => {
  const methods = corsList(api.cors_allowed_methods)
  return HttpMiddleware.cors({
    allowedOrigins: corsList(api.cors_allowed_origins),
    allowedHeaders: corsList(api.cors_allowed_headers),
    ...(methods.length > 0 ? { allowedMethods: methods } : {})
  })
}

/** "/v2/api/" → "/v2/api"; "" and "/" → "". */
export const normalizeBasePath = (basePath: string): string => {
  const trimmed = basePath.trim().replace(/\/+$/, "")
  return trimmed === "" ? "" : trimmed.startsWith("/") ? trimmed : `/${trimmed}`
}

/** The part of `url` below the base path, or undefined when the url is outside it. */
export const stripBasePath = (url: string, basePath: string): string | undefined => {
  if (basePath === "") return url
  if (!url.startsWith(basePath)) return undefined
  const rest = url.slice(basePath.length)
  if (rest === "" || rest.startsWith("?")) return `/${rest}`
  return rest.startsWith("/") ? rest : undefined
}

/** "/flows/" and "/flows" are one route. */
export const stripTrailingSlash = (url: string): string => {
  const q = url.indexOf("?")
  const path = q === -1 ? url : url.slice(0, q)
  if (path.length <= 1 || !path.endsWith("/")) return url
  return path.replace(/\/+$/, "") + (q === -1 ? "" : url.slice(q))
}

const hasEmptyBody = (request: HttpServerRequest.HttpServerRequest) => {
  const headers = request.headers
  if (headers["transfer-encoding"] !== undefined) return false
  const length = headers["content-length"]
  return length === undefined || length === "0"
}

/**
 * The reference treats a missing body as an empty one when every body field is optional (filters,
 * counts). Presenting it as an empty form makes the body decode as `{}`.
 */
const withEmptyBodyAsObject = (request: HttpServerRequest.HttpServerRequest) =>
  (request.method === "POST" || request.method === "PUT" || request.method === "PATCH") && hasEmptyBody(request)
    ? { ...request.headers, "content-type": "application/x-www-form-urlencoded" }
    : undefined

const notFound = HttpServerResponse.unsafeJson({ detail: "Not Found" }, { status: 404 })
const internalError = HttpServerResponse.unsafeJson({ exception_message: "Internal Server Error" }, { status: 500 })

/** Serves `api` under the base path; everything else is a JSON 404. */
export const edge = (settings: SettingsValue) => {
  const basePath = normalizeBasePath(settings.server.api.base_path)
  const cors = corsMiddleware(settings.server.api)
  return <E>(api: HttpApp.Default<E>): HttpApp.Default<never> => {
    const routed = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const below = stripBasePath(request.url, basePath)
      if (below === undefined) return notFound
      const headers = withEmptyBodyAsObject(request)
      const inner = request.modify(
        headers === undefined ? { url: stripTrailingSlash(below) } : { url: stripTrailingSlash(below), headers }
      )
      return yield* Effect.provideService(api, HttpServerRequest.HttpServerRequest, inner)
    })
    const guarded = routed.pipe(
      Effect.catchAllCause((cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
        // The platform fails with a ready answer of its own in some cases (499 for a client that
        // went away): that answer stands and is no unexpected failure.
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure) && HttpServerResponse.isServerResponse(failure.value)) {
          return Effect.succeed(failure.value)
        }
        // Outside the Api's own mapping too (a middleware's statement), an unavailable database is a 503.
        const unavailable = unavailableAnswerForCause(cause)
        if (Option.isSome(unavailable)) return unavailable.value
        return Effect.as(Effect.logError("Unexpected failure while handling a request", cause), internalError)
      })
    )
    return logRequests(cors(guarded))
  }
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
