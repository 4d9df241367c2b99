/**
 * With server.api.csrf_protection_enabled, a request that changes state (POST, PUT, PATCH, DELETE)
 * must carry the token the client got from GET /csrf-token, in Prefect-Csrf-Token, and the client
 * id it asked with, in Prefect-Csrf-Client; otherwise 403. Reads (and CORS preflights) are never
 * checked. Expired tokens no longer count, and go whenever a token is issued (./http.ts), as in the
 * reference.
 */
import { HttpApiBuilder, type HttpApp, HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { sameSecret } from "../domain/secrets.ts"
import { now } from "../domain/time.ts"
import { errorResponse, ForbiddenResponse } from "../http/errors.ts"
import { Forbidden } from "../domain/errors.ts"
import { Settings } from "../settings/settings.ts"
import { CsrfTokensRepo } from "./repo.ts"

const PROTECTED = new Set(["POST", "PUT", "PATCH", "DELETE"])

const forbidden = (detail: string, headers: Record<string, string> = {}) =>
  errorResponse(ForbiddenResponse, new Forbidden({ detail }), headers)

export const csrfMiddleware = HttpApiBuilder.middleware(
  Effect.gen(function* () {
    const settings = yield* Settings
    const tokens = yield* CsrfTokensRepo
    // Off (the default): the app itself, with no step of its own on each request.
    if (!settings.server.api.csrf_protection_enabled) return (app: HttpApp.Default) => app
    return (app: HttpApp.Default) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        if (!PROTECTED.has(request.method)) return yield* app
        // Absent headers are "missing"; present but empty ones are simply wrong, as in the reference.
        const token = request.headers["prefect-csrf-token"]
        if (token === undefined) return forbidden("Missing CSRF token.")
        const client = request.headers["prefect-csrf-client"]
        if (client === undefined) return forbidden("Missing client identifier.")
        const stored = yield* tokens.validToken(client, yield* now)
        if (Option.isNone(stored) || !sameSecret(token, stored.value)) {
          return forbidden("Invalid CSRF token or client identifier.", { "access-control-allow-origin": "*" })
        }
        return yield* app
      })
  })
).pipe(Layer.provide(CsrfTokensRepo.Default))
