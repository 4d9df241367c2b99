/**
 * CORS from server.api.cors_allowed_origins, _methods and _headers (comma-separated, "*" for any),
 * with the reference's semantics (Starlette's CORSMiddleware, which it installs in front of the API
 * and the UI alike):
 *
 * - a preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered here, 200 when
 *   origin, method and headers are allowed and 400 otherwise (with a JSON `detail`, as every error
 *   of Baton's);
 * - "*" for headers allows whatever the preflight asks for (authorization, prefect-csrf-token,
 *   prefect-csrf-client …); a list always allows the CORS-safelisted Accept, Accept-Language,
 *   Content-Language and Content-Type besides;
 * - any other request with an Origin is answered by the app and marked with the allowed origin ("*",
 *   or the origin itself when it is listed, or when a request to a "*" server carries cookies).
 */
import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import type { SettingsValue } from "../settings/settings.ts"

const ALL_METHODS = ["DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"]
const SAFELISTED_HEADERS = ["Accept", "Accept-Language", "Content-Language", "Content-Type"]
/** Seconds a browser may keep a preflight's answer (the reference's default). */
const MAX_AGE = "600"

const list = (value: string): ReadonlyArray<string> =>
  value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")

const addVary = (headers: Record<string, string>, value: string) => {
  const existing = headers["vary"]
  headers["vary"] = existing === undefined || existing === "" ? value : `${existing}, ${value}`
}

/** Whether server.api.cors_allowed_origins allows `origin` ("*" allows every one). */
export const corsAllowsOrigin = (api: SettingsValue["server"]["api"]): ((origin: string) => boolean) => {
  const origins = list(api.cors_allowed_origins)
  const allowAll = origins.includes("*")
  const originSet = new Set(origins)
  return (origin) => allowAll || originSet.has(origin)
}

export const corsMiddleware = (api: SettingsValue["server"]["api"]) => {
  const origins = list(api.cors_allowed_origins)
  const methodList = list(api.cors_allowed_methods)
  const headerList = list(api.cors_allowed_headers)
  const allowAllOrigins = origins.includes("*")
  const allowAllHeaders = headerList.includes("*")
  const methods = methodList.includes("*") ? ALL_METHODS : methodList
  const allowedHeaders = [...new Set([...SAFELISTED_HEADERS, ...headerList])].sort()
  const allowedHeadersLower = new Set(allowedHeaders.map((h) => h.toLowerCase()))
  const originSet = new Set(origins)
  const isAllowedOrigin = corsAllowsOrigin(api)

  const preflightBase: Record<string, string> = {
    "access-control-allow-methods": methods.join(", "),
    "access-control-max-age": MAX_AGE
  }
  if (allowAllOrigins) preflightBase["access-control-allow-origin"] = "*"
  else preflightBase["vary"] = "Origin"
  if (!allowAllHeaders) preflightBase["access-control-allow-headers"] = allowedHeaders.join(", ")

  const preflight = (request: HttpServerRequest.HttpServerRequest, origin: string) => {
    const headers = { ...preflightBase }
    const failures: Array<string> = []
    if (isAllowedOrigin(origin)) {
      if (!allowAllOrigins) headers["access-control-allow-origin"] = origin
    } else {
      failures.push("origin")
    }
    if (!methods.includes(request.headers["access-control-request-method"]!)) failures.push("method")
    const requested = request.headers["access-control-request-headers"]
    if (requested !== undefined) {
      if (allowAllHeaders) headers["access-control-allow-headers"] = requested
      else if (requested.split(",").some((h) => !allowedHeadersLower.has(h.trim().toLowerCase()))) failures.push("headers")
    }
    return failures.length === 0
      ? HttpServerResponse.text("OK", { status: 200, headers, contentType: "text/plain; charset=utf-8" })
      : HttpServerResponse.unsafeJson({ detail: `Disallowed CORS ${failures.join(", ")}` }, { status: 400, headers })
  }

  const mark = (request: HttpServerRequest.HttpServerRequest, origin: string, response: HttpServerResponse.HttpServerResponse) => {
    if (response.headers["access-control-allow-origin"] !== undefined) return response
    if (allowAllOrigins) {
      // A request with credentials may not be answered with "*": name the origin.
      if (request.headers["cookie"] === undefined) {
        return HttpServerResponse.setHeader(response, "access-control-allow-origin", "*")
      }
    } else if (!originSet.has(origin)) {
      return response
    }
    const headers: Record<string, string> = { ...response.headers, "access-control-allow-origin": origin }
    addVary(headers, "Origin")
    return HttpServerResponse.setHeaders(response, headers)
  }

  return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const origin = request.headers["origin"]
      if (origin === undefined) return app
      if (request.method === "OPTIONS" && request.headers["access-control-request-method"] !== undefined) {
        return Effect.succeed(preflight(request, origin))
      }
      // The Api sends its answer itself, through the pre-response handlers; an answer made here,
      // outside the Api (the UI, a 404), is sent from what the app returns.
      return HttpApp.appendPreResponseHandler((_, response) => Effect.succeed(mark(request, origin, response))).pipe(
        Effect.zipRight(app),
        Effect.map((response) => mark(request, origin, response))
      )
    })
}
