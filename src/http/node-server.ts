/**
 * The Node HTTP server Baton listens with. Liveness probes (`GET {base}/health`) are answered here,
 * before the Effect router: load balancers and workers call it constantly, and its answer depends on
 * nothing but the process being alive (whatever version header it carries, as the Api answers it too).
 * Anything the Api would treat differently (a CORS origin to match, request logging at DEBUG) still
 * goes through the Api.
 *
 * The server also bounds what a client can hold: a client gets server.api.headers_timeout to send
 * its headers and server.api.request_read_timeout to send its whole request (then 408 and the
 * connection closes: slow clients cannot pin connections), an idle keep-alive connection closes
 * after server.api.keepalive_timeout, and beyond server.api.max_concurrent_requests requests in
 * flight a new one is answered 503 with Retry-After at once (clients of the reference retry 503).
 * Websockets have bounds of their own (server.api.websockets): they never count as requests.
 */
import { Context, Schema } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import type { SettingsValue } from "../settings/settings.ts"
import { ServiceUnavailable, ServiceUnavailableResponse } from "./errors.ts"
import { normalizeBasePath } from "./paths.ts"
import { SocketGuard, socketLimits } from "./websocket-guard.ts"

const HEALTH_BODY = "true"

/** Seconds a client refused for load is asked to wait before it retries. */
export const RETRY_AFTER_SECONDS = 1

const livenessAnswer = (settings: SettingsValue, logsRequests: boolean) => {
  if (logsRequests) return undefined
  const base = normalizeBasePath(settings.server.api.base_path)
  const paths = new Set([`${base}/health`, `${base}/health/`])
  const anyOrigin = settings.server.api.cors_allowed_origins.trim() === "*"
  return (request: IncomingMessage, response: ServerResponse): boolean => {
    if (request.method !== "GET" || request.url === undefined || !paths.has(request.url)) return false
    const origin = request.headers.origin !== undefined
    // A listed origin is named in the answer, and so is any origin of a request with cookies.
    if (origin && (!anyOrigin || request.headers.cookie !== undefined)) return false
    response.writeHead(200, {
      "content-type": "application/json",
      "content-length": HEALTH_BODY.length,
      ...(anyOrigin ? { "access-control-allow-origin": "*" } : {})
    })
    response.end(HEALTH_BODY)
    return true
  }
}

/** A 503 with Retry-After and the reference's JSON body, for a client refused for load. */
const unavailable = (settings: SettingsValue, detail: string) => {
  const body = JSON.stringify(Schema.encodeSync(ServiceUnavailableResponse)(new ServiceUnavailable({ detail })))
  const anyOrigin = settings.server.api.cors_allowed_origins.trim() === "*"
  const headers = {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    "retry-after": String(RETRY_AFTER_SECONDS),
    ...(anyOrigin ? { "access-control-allow-origin": "*" } : {})
  }
  return { body, headers }
}

/** Answers a handshake with the 503 on its raw socket (the HTTP server has let go of it). */
const refuseUpgrade = (socket: Duplex, answer: ReturnType<typeof unavailable>): true => {
  const head = Object.entries(answer.headers).map(([name, value]) => `${name}: ${value}\r\n`).join("")
  socket.end(`HTTP/1.1 503 Service Unavailable\r\n${head}connection: close\r\n\r\n${answer.body}`)
  return true
}

/** Counts requests in flight and answers 503 beyond `limit` (0: no limit). */
const loadShedder = (settings: SettingsValue) => {
  const limit = settings.server.api.max_concurrent_requests
  if (limit === 0) return undefined
  const answer = unavailable(settings, "The server is handling as many requests as it allows; retry later.")
  let inFlight = 0
  /** A request: refused (true, answered) or counted until its response closes. */
  return (response: ServerResponse): boolean => {
    if (inFlight >= limit) {
      response.writeHead(503, answer.headers)
      response.end(answer.body)
      return true
    }
    inFlight++
    // "close" comes once per response: when it is sent, or when the client went away first.
    response.once("close", () => inFlight--)
    return false
  }
}

/**
 * Websocket handshakes, counted apart from requests so that open websockets never take the slots of
 * plain requests: at most server.api.websockets.max_open open at once, of which at most
 * max_unauthenticated not authenticated yet; beyond either, the handshake is answered 503. Each
 * admitted socket is put under its guard (./websocket-guard.ts) before anything reads from it.
 */
const websocketAdmission = (settings: SettingsValue) => {
  const { max_open, max_unauthenticated } = settings.server.api.websockets
  const limits = socketLimits(settings)
  const tooMany = unavailable(settings, "The server has as many websockets open as it allows; retry later.")
  const tooManyWaiting = unavailable(settings, "The server has as many websockets waiting to authenticate as it allows; retry later.")
  let open = 0
  let waiting = 0
  /** A handshake: refused (true, answered) or counted for as long as its connection is open. */
  return (socket: Duplex): boolean => {
    if (max_open > 0 && open >= max_open) return refuseUpgrade(socket, tooMany)
    if (max_unauthenticated > 0 && waiting >= max_unauthenticated) return refuseUpgrade(socket, tooManyWaiting)
    open++
    waiting++
    let authenticating = true
    const settle = () => {
      if (authenticating) waiting--
      authenticating = false
    }
    SocketGuard.attach(socket, limits, settle)
    socket.once("close", () => {
      open--
      settle()
    })
    return false
  }
}

const millis = (seconds: number) => Math.round(seconds * 1000)

/** node:http's timeouts from the settings (0 turns one off). */
export const timeoutOptions = (settings: SettingsValue) => {
  const api = settings.server.api
  const requestTimeout = millis(api.request_read_timeout)
  // Node requires the headers' timeout to be within the whole request's.
  const headersTimeout = requestTimeout > 0 ? Math.min(millis(api.headers_timeout), requestTimeout) : millis(api.headers_timeout)
  const active = [headersTimeout, requestTimeout].filter((t) => t > 0)
  return {
    headersTimeout,
    requestTimeout,
    // How often node looks for connections past those timeouts (its default is 30 s).
    connectionsCheckingInterval: active.length === 0 ? 30_000 : Math.max(100, Math.min(5_000, Math.min(...active) / 4)),
    // 0 would keep idle connections open for ever: close them right after their response instead.
    keepAliveTimeout: Math.max(1, api.keepalive_timeout * 1000)
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

/** A handler in front of the platform's: true when it answers the request, false to leave it to the platform. */
export type FrontHandler = (request: IncomingMessage, response: ServerResponse) => boolean

const frontHandlers = new WeakMap<Server, FrontHandler>()

/** The handler in front of the platform's for `server`, if there is one. */
export const frontHandlerOf = (server: Server): FrontHandler | undefined => frontHandlers.get(server)

/** The node:http server Baton listens with (made by `makeNodeServer`), for what serves in front of the platform. */
export class NodeServer extends Context.Tag("baton/http/NodeServer")<NodeServer, Server>() {}

/** Puts `handler` in front of the platform's handler of `server`'s requests (after the liveness answer and the in-flight bound). */
export const serveInFront = (server: Server, handler: FrontHandler | undefined): void => {
  if (handler === undefined) frontHandlers.delete(server)
  else frontHandlers.set(server, handler)
}

/**
 * A node:http server with the liveness fast path, the in-flight bound and the websocket bounds in
 * front of whatever handler is attached later; the fast path is left out when requests are logged
 * (at DEBUG), so every request still shows in the log.
 */
export const makeNodeServer = (settings: SettingsValue, options: { readonly logsRequests: boolean }): Server => {
  const server = createServer(timeoutOptions(settings))
  server.on("clientError", answerClientError)
  const answer = livenessAnswer(settings, options.logsRequests)
  const shed = loadShedder(settings)
  const admit = websocketAdmission(settings)
  // The platform attaches its own "request" and "upgrade" listeners; intercepting the events lets
  // the fast path and the bounds answer first and keeps everything else on the platform's handlers.
  const emit = server.emit.bind(server) as (event: string | symbol, ...args: Array<unknown>) => boolean
  // The port opens before the platform attaches its listeners: what comes in meanwhile (a request
  // right after the first liveness answer; a worker of --workers is handed connections as soon as
  // it listens) waits for them, where Node would leave it unanswered.
  const early: Array<[string, Array<unknown>]> = []
  // What was held is counted (shed, admitted) once, when it first came.
  const held = new WeakSet<object>()
  // Node hands an upgrade request to the "request" listeners while no "upgrade" listener is attached:
  // a websocket opened in that window would reach the platform as a plain request (and be refused).
  // This one stands in until the platform's is attached, so such a websocket is held as an upgrade.
  const standIn = () => {}
  server.on("upgrade", standIn)
  server.on("newListener", (event, listener) => {
    if ((event === "request" || event === "upgrade") && listener !== standIn) setImmediate(() => {
      if (event === "upgrade") server.off("upgrade", standIn)
      for (const [held, args] of early.splice(0)) server.emit(held, ...args)
    })
  })
  server.emit = ((event: string | symbol, ...args: Array<unknown>) => {
    if (event === "request") {
      const response = args[1] as ServerResponse
      if (answer !== undefined && answer(args[0] as IncomingMessage, response)) return true
      // A held request counts as in flight: the bound covers what waits too.
      if (!held.has(response) && shed !== undefined && shed(response)) return true
      const front = frontHandlers.get(server)
      if (front !== undefined && front(args[0] as IncomingMessage, response)) return true
      if (server.listenerCount("request") === 0) {
        held.add(response)
        return early.push(["request", args]) > 0
      }
    }
    if (event === "upgrade") {
      if (!held.has(args[1] as object) && admit(args[1] as Duplex)) return true
      if (server.listeners("upgrade").every((listener) => listener === standIn)) {
        held.add(args[1] as object)
        return early.push(["upgrade", args]) > 0
      }
    }
    return emit(event, ...args)
  }) as Server["emit"]
  return server
}
