/**
 * The shared credential: with server.api.auth_string ("user:password") set, every request below the
 * base path must carry it as HTTP Basic credentials, except what the reference leaves open:
 * `GET /health` and `GET /ready` (probes), CORS preflights (answered in front of this check), and
 * the websocket routes, whose clients authenticate with the first message of the `prefect`
 * subprotocol instead (./websocket.ts). Anything else without the credential is a 401.
 */
import type { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Redacted } from "effect"
import { digestOf, sameDigest } from "../domain/secrets.ts"
import type { SettingsValue } from "../settings/settings.ts"
import { errorResponse, Unauthorized, UnauthorizedResponse } from "./errors.ts"
import { WEBSOCKET_PATHS } from "./websocket.ts"

/** Paths (below the base path) a GET may reach without credentials, as in the reference. */
const OPEN_FOR_GET = new Set(["/health", "/ready"])

const CHALLENGE = { "www-authenticate": 'Basic realm="baton", charset="UTF-8"' }

/**
 * The challenge makes a browser show its own password dialog. A page's script (the UI) that gets a
 * 401 shows its own login instead, so script requests (Sec-Fetch-Mode other than navigate) get the
 * 401 without it; a command-line client or a browser opening the URL gets the challenge.
 */
const challengeFor = (request: HttpServerRequest.HttpServerRequest) => {
  const mode = request.headers["sec-fetch-mode"]
  return mode === undefined || mode === "navigate" ? CHALLENGE : {}
}

const pathnameOf = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

/** Whether `request` may go on without credentials. `url` is its URL below the base path. */
const isOpen = (request: HttpServerRequest.HttpServerRequest, url: string) => {
  const path = pathnameOf(url)
  if (request.method === "GET" && OPEN_FOR_GET.has(path)) return true
  // A websocket handshake is authenticated by its first message, as the reference's clients expect
  // (the logs client sends no Authorization header). Only the websocket routes: an upgrade header on
  // any other route changes nothing.
  return request.method === "GET" && request.headers.upgrade?.toLowerCase() === "websocket" && WEBSOCKET_PATHS.has(path)
}

/** The user:password of an `Authorization: Basic …` header; undefined when there is none or it is malformed. */
const basicCredential = (header: string | undefined): Buffer | undefined => {
  if (header === undefined) return undefined
  const parts = header.trim().split(/\s+/)
  if (parts.length !== 2 || parts[0]!.toLowerCase() !== "basic") return undefined
  return Buffer.from(parts[1]!, "base64")
}

/**
 * The check for `settings`: a function giving the 401 for a request that may not go on, or
 * undefined. Without an auth string it lets everything through.
 */
export const basicAuth = (settings: SettingsValue) => {
  const authString = settings.server.api.auth_string
  if (authString === null) return (_request: HttpServerRequest.HttpServerRequest, _url: string) => undefined
  // Only the digest is kept; the comparison never depends on where or whether the lengths differ.
  const expected = digestOf(Buffer.from(Redacted.value(authString), "utf8"))
  return (request: HttpServerRequest.HttpServerRequest, url: string): HttpServerResponse.HttpServerResponse | undefined => {
    if (isOpen(request, url)) return undefined
    const credential = basicCredential(request.headers.authorization)
    if (credential !== undefined && sameDigest(credential, expected)) return undefined
    return errorResponse(UnauthorizedResponse, new Unauthorized({ detail: "Unauthorized" }), challengeFor(request))
  }
}
