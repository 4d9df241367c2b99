/**
 * The Node HTTP server Baton listens with. Liveness probes (`GET {base}/health`) are answered here,
 * before the Effect router: load balancers and workers call it constantly, and its answer depends on
 * nothing but the process being alive. Anything the Api would treat differently (a version header
 * to check, a CORS origin to match, request logging at DEBUG) still goes through the Api.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import type { SettingsValue } from "../settings/settings.ts"
import { normalizeBasePath } from "./edge.ts"
import { VERSION_HEADER } from "./middleware.ts"

const HEALTH_BODY = "true"

const livenessAnswer = (settings: SettingsValue, logsRequests: boolean) => {
  if (logsRequests) return undefined
  const base = normalizeBasePath(settings.server.api.base_path)
  const paths = new Set([`${base}/health`, `${base}/health/`])
  const anyOrigin = settings.server.api.cors_allowed_origins.trim() === "*"
  return (request: IncomingMessage, response: ServerResponse): boolean => {
    if (request.method !== "GET" || request.url === undefined || !paths.has(request.url)) return false
    if (request.headers[VERSION_HEADER] !== undefined) return false
    const origin = request.headers.origin !== undefined
    if (origin && !anyOrigin) return false
    response.writeHead(200, {
      "content-type": "application/json",
      "content-length": HEALTH_BODY.length,
      ...(anyOrigin ? { "access-control-allow-origin": "*" } : {})
    })
    response.end(HEALTH_BODY)
    return true
  }
}

/**
 * Requests Node refuses before any handler sees them (a request head over its 16 KB limit, a
 * malformed request line) are answered as Node answers them, with the reference's JSON error body
 * instead of none.
 */
const answerClientError = (error: Error & { code?: string }, socket: Duplex) => {
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy()
    return
  }
  const status = error.code === "HPE_HEADER_OVERFLOW" ? 431 : error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400
  const body = JSON.stringify({ detail: STATUS_CODES[status] })
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

/**
 * A node:http server with the liveness fast path in front of whatever handler is attached later;
 * without it when requests are logged (at DEBUG), so every request still shows in the log.
 */
export const makeNodeServer = (settings: SettingsValue, options: { readonly logsRequests: boolean }): Server => {
  const server = createServer({ keepAliveTimeout: settings.server.api.keepalive_timeout * 1000 })
  server.on("clientError", answerClientError)
  const answer = livenessAnswer(settings, options.logsRequests)
  if (answer === undefined) return server
  // The platform attaches its own "request" listener; intercepting the event lets the fast path
  // answer first and keeps every other request on the platform's handler untouched.
  const emit = server.emit.bind(server) as (event: string | symbol, ...args: Array<unknown>) => boolean
  server.emit = ((event: string | symbol, ...args: Array<unknown>) => {
    if (event === "request" && answer(args[0] as IncomingMessage, args[1] as ServerResponse)) return true
    return emit(event, ...args)
  }) as Server["emit"]
  return server
}
