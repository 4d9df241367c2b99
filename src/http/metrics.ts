/**
 * The HTTP side of the metrics (./metrics-registry.ts): `GET {base}/metrics`, and each request's
 * answer recorded by its route template.
 *
 * The route is a plain route beside the Api, as the websockets and the docs are, not an endpoint
 * of the Api: it answers Prometheus text rather than JSON, takes no version header, is left out of
 * the OpenAPI document (clients of the Api have no use for it) and exists only when
 * server.metrics_enabled is on (off, the path is a 404 like any other). It is below the base path,
 * so the edge asks for the shared credential (server.api.auth_string) as for every route.
 *
 * A request is labelled with the template of the route that takes its path (`/flow_runs/{id}`),
 * never the path itself, so the number of series stays bounded whatever clients send.
 */
import { type HttpApi, HttpApiBuilder, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Metrics, type MetricsShape, OUTSIDE_ROUTE, UNMATCHED_ROUTE } from "./metrics-registry.ts"
import { normalizeBasePath, pathnameOf, stripBasePath, stripTrailingSlash } from "./paths.ts"
import { routesOf } from "./routes.ts"

/** Where the metrics are served, below the base path. */
export const METRICS_PATH = "/metrics"

/** `GET {base}/metrics` when metrics are on; nothing otherwise. */
export const MetricsRouteLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const metrics = yield* Metrics
    if (!metrics.enabled) return
    yield* router.get(
      METRICS_PATH,
      Effect.map(metrics.render, ({ body, contentType }) => HttpServerResponse.text(body, { contentType }))
    )
  })
)

/** "/flows/:id" → "/flows/{id}", as the OpenAPI document writes it. */
const templateOf = (path: string) => path.replace(/:(\w+)\??/g, "{$1}")

/**
 * The route template of a request URL: the Api's routes and `paths` (those served beside it), or
 * UNMATCHED_ROUTE below the base path and OUTSIDE_ROUTE outside it. A path is matched by its shape
 * alone (a parameter takes any segment), whatever the method: `GET /flows/filter` (405) is
 * labelled `/flows/filter`, `GET /flows/x` (404) `/flows/{id}`.
 */
export const routeLabels = (basePath: string, api: HttpApi.HttpApi.Any, paths: ReadonlyArray<string>) => {
  const base = normalizeBasePath(basePath)
  const fixed = new Map<string, string>(paths.map((path) => [path, path]))
  // Templates with parameters, by their first segment (`flow_runs`): a path is tried against its
  // own area's few, not against every route ("" holds those starting with a parameter).
  const patterns = new Map<string, Array<{ readonly pattern: RegExp; readonly template: string }>>()
  for (const route of routesOf(api)) {
    const template = templateOf(route.endpoint.path)
    if (route.params.length === 0) {
      fixed.set(route.endpoint.path, template)
      continue
    }
    const first = firstSegment(route.endpoint.path)
    const key = first.startsWith(":") ? "" : first
    const list = patterns.get(key) ?? []
    if (!list.some((p) => p.template === template)) list.push({ pattern: route.pattern, template })
    patterns.set(key, list)
  }
  const anyFirst = patterns.get("") ?? []
  const matching = (list: ReadonlyArray<{ readonly pattern: RegExp; readonly template: string }> | undefined, path: string) => {
    if (list !== undefined) for (const { pattern, template } of list) if (pattern.test(path)) return template
    return undefined
  }
  return (url: string): string => {
    const below = stripBasePath(url, base)
    if (below === undefined) return OUTSIDE_ROUTE
    const path = pathnameOf(stripTrailingSlash(below))
    return fixed.get(path) ?? matching(patterns.get(firstSegment(path)), path) ?? matching(anyFirst, path) ?? UNMATCHED_ROUTE
  }
}

/** "/flow_runs/x/set_state" → "flow_runs". */
const firstSegment = (path: string) => {
  const end = path.indexOf("/", 1)
  return end === -1 ? path.slice(1) : path.slice(1, end)
}

/**
 * What the edge records of each request it answers (`api` served under `basePath`, `paths` beside
 * it), or undefined when metrics are off: the edge then adds nothing to a request. Websocket
 * handshakes are left out: their answer comes when the socket closes, and `baton_websockets_open`
 * counts them.
 */
export const requestRecorder = (metrics: MetricsShape, basePath: string, api: HttpApi.HttpApi.Any, paths: ReadonlyArray<string>) => {
  if (!metrics.enabled) return undefined
  const label = routeLabels(basePath, api, paths)
  return (request: HttpServerRequest.HttpServerRequest, status: number, startedMs: number) => {
    if (request.headers.upgrade?.toLowerCase() === "websocket") return
    metrics.httpRequest(request.method, label(request.url), status, (performance.now() - startedMs) / 1000)
  }
}

export type RequestRecorder = NonNullable<ReturnType<typeof requestRecorder>>
