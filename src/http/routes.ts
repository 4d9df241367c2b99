/**
 * The Api's routes as the reference's router matches them, for the answers given before (or
 * instead of) a handler: which route a request is for, and whether a path no route of its method
 * takes is a 405 (a route of another method takes it) or a 404.
 *
 * As in the reference, a UUID path parameter (`{id:uuid}` there) takes only a UUID: `/flows/filter`
 * is no flow id, so `GET /flows/filter` is a 405 (only POST takes that path), not a 404 from the
 * flow route. A route that declares its UUID parameter without the converter (the lease of
 * `/v2/concurrency_limits/leases/{lease_id}/renew`) takes any segment and validates it: annotate
 * that parameter's schema with `validatedAfterRouting` (422 `uuid_parsing`).
 */
import { HttpApi, type HttpApiEndpoint } from "@effect/platform"
import { Option, Schema, SchemaAST } from "effect"

/** Marks a UUID path parameter as taking any segment, validated once routed (no `:uuid` converter in the reference). */
export const ValidatedAfterRoutingAnnotationId: unique symbol = Symbol.for("baton/http/ValidatedAfterRouting")

/** `schema` (a UUID path parameter) taking any path segment, as a parameter the reference declares without `:uuid`. */
export const validatedAfterRouting = <A, I>(schema: Schema.Schema<A, I>): Schema.Schema<A, I> =>
  schema.annotations({ [ValidatedAfterRoutingAnnotationId]: true })

export interface Route {
  readonly method: string
  readonly pattern: RegExp
  readonly params: ReadonlyArray<string>
  /** The parameters that take only a UUID (by name). */
  readonly uuidParams: ReadonlySet<string>
  readonly endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
}

export interface RouteMatch {
  readonly route: Route
  readonly params: Readonly<Record<string, string>>
}

/** The same text as the reference's `uuid` converter takes (any case, hyphenated). */
const UUID_SEGMENT = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

const isUuidSchema = (ast: SchemaAST.AST): boolean => {
  if (Option.getOrUndefined(SchemaAST.getSchemaIdAnnotation(ast)) === Schema.UUIDSchemaId) return true
  switch (ast._tag) {
    case "Refinement":
      return isUuidSchema(ast.from)
    case "Transformation":
      return isUuidSchema(ast.to)
    default:
      return false
  }
}

const isValidatedAfterRouting = (ast: SchemaAST.AST): boolean =>
  ast.annotations[ValidatedAfterRoutingAnnotationId] === true ||
  (ast._tag === "Refinement" && isValidatedAfterRouting(ast.from)) ||
  (ast._tag === "Transformation" && isValidatedAfterRouting(ast.to))

/** The path parameters of a path schema that take only a UUID. */
const uuidParamsOf = (pathSchema: Option.Option<Schema.Schema.Any>): ReadonlySet<string> => {
  const out = new Set<string>()
  if (Option.isNone(pathSchema)) return out
  let ast = pathSchema.value.ast
  while (ast._tag === "Transformation" || ast._tag === "Refinement") ast = ast.from
  if (ast._tag !== "TypeLiteral") return out
  for (const ps of ast.propertySignatures) {
    if (typeof ps.name === "string" && isUuidSchema(ps.type) && !isValidatedAfterRouting(ps.type)) out.add(ps.name)
  }
  return out
}

/** Every endpoint of the Api as a matcher, in the order the Api declares them. */
export const routesOf = (api: HttpApi.HttpApi.Any): ReadonlyArray<Route> => {
  const routes: Array<Route> = []
  HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
    onGroup: () => {},
    onEndpoint: (reflected) => {
      const endpoint = reflected.endpoint as unknown as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
      const params: Array<string> = []
      const source = endpoint.path
        .split("/")
        .map((segment) => {
          if (!segment.startsWith(":")) return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
          params.push(segment.slice(1).replace(/\?$/, ""))
          return "([^/]+)"
        })
        .join("/")
      routes.push({
        method: endpoint.method,
        pattern: new RegExp(`^${source}$`),
        params,
        uuidParams: uuidParamsOf(endpoint.pathSchema),
        endpoint
      })
    }
  })
  return routes
}

const safeDecodeURIComponent = (s: string) => {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/** The parameters `route` reads from `pathname`, or undefined when the route does not take that path. */
export const pathParams = (route: Route, pathname: string): Record<string, string> | undefined => {
  const m = route.pattern.exec(pathname)
  if (m === null) return undefined
  const params: Record<string, string> = {}
  for (const [i, name] of route.params.entries()) {
    const value = safeDecodeURIComponent(m[i + 1]!)
    if (route.uuidParams.has(name) && !UUID_SEGMENT.test(value)) return undefined
    params[name] = value
  }
  return params
}

/**
 * Each list of routes by method and path shape (the number of segments and the first one), in the
 * order the list has them, made once per list: a request tries the few routes of its shape, not
 * every route of its method. A route whose first segment is a parameter is in every shape of its
 * length. Shapes are kept only for the routes' own first segments and lengths (a path longer than
 * every route, or whose first segment no route names, has its shape's routes without a key of its
 * own), so what requests send cannot grow the index.
 */
interface ShapeIndex {
  /** Each route's path split at "/", in the list's order. */
  readonly paths: ReadonlyArray<ReadonlyArray<string>>
  /** The routes' first segments that are no parameter. */
  readonly firsts: ReadonlySet<string>
  /** The most segments a route has. */
  readonly longest: number
  readonly shapes: Map<string, ReadonlyArray<Route>>
}

const byShape = new WeakMap<ReadonlyArray<Route>, ShapeIndex>()

/** A first segment no route names: no path segment holds a "/". */
const UNNAMED = "/"

const routesFor = (routes: ReadonlyArray<Route>, method: string, pathname: string): ReadonlyArray<Route> => {
  let index = byShape.get(routes)
  if (index === undefined) {
    const paths = routes.map((route) => route.endpoint.path.split("/"))
    index = {
      paths,
      firsts: new Set(paths.flatMap((path) => (path[1] === undefined || path[1].startsWith(":") ? [] : [path[1]]))),
      longest: Math.max(0, ...paths.map((path) => path.length)),
      shapes: new Map()
    }
    byShape.set(routes, index)
  }
  // The path's segments counted and its first one taken without splitting it.
  let segments = 1
  let firstEnd = -1
  for (let i = 0; i < pathname.length; i++) {
    if (pathname.charCodeAt(i) !== 47) continue
    segments++
    if (firstEnd === -1 && i > 0) firstEnd = i
  }
  if (segments > index.longest) return []
  const segment = segments === 1 ? "" : pathname.slice(1, firstEnd === -1 ? pathname.length : firstEnd)
  const first = index.firsts.has(segment) ? segment : UNNAMED
  const key = `${method} ${segments} ${first}`
  let found = index.shapes.get(key)
  if (found === undefined) {
    const paths = index.paths
    found = routes.filter((route, i) => {
      const path = paths[i]!
      return route.method === method && path.length === segments && (path[1]?.startsWith(":") === true || path[1] === first)
    })
    index.shapes.set(key, found)
  }
  return found
}

/** The route of `method` that takes `pathname`, with its path parameters. */
export const matchRoute = (routes: ReadonlyArray<Route>, method: string, pathname: string): RouteMatch | undefined => {
  for (const route of routesFor(routes, method, pathname)) {
    const params = pathParams(route, pathname)
    if (params !== undefined) return { route, params }
  }
  return undefined
}

/** The methods of the routes that take `pathname`, each once, in the order the Api declares them. */
export const allowedMethods = (routes: ReadonlyArray<Route>, pathname: string): ReadonlyArray<string> => {
  const methods: Array<string> = []
  for (const route of routes) {
    if (!methods.includes(route.method) && pathParams(route, pathname) !== undefined) methods.push(route.method)
  }
  return methods
}
