/**
 * Api-level middleware: the version header check, and the one place where failures that happen
 * before a handler runs (decoding, routing, malformed JSON) become the reference's answers.
 */
import {
  HttpApi,
  HttpApiBuilder,
  type HttpApiEndpoint,
  type HttpApp,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { Cause, Effect, Either, Option, Schema } from "effect"
import { databaseMessage, isDataException, isIntegrityViolation } from "../database/errors.ts"
import { isTooManyParameters, MAX_STATEMENT_PARAMETERS, type TooManyParameters } from "../database/statements.ts"
import { API_VERSION } from "../version.ts"
import {
  BadRequest,
  type Conflict,
  errorResponse,
  integrityConflict,
  MethodNotAllowed,
  NotFound,
  ValidationError,
  type ValidationDetailItem,
  ValidationErrorResponse
} from "./errors.ts"
import { announcesBody, contentTypeProblem } from "./content-type.ts"
import { CleansTextAnnotationId, MAX_JSON_DEPTH, mayHoldNonFiniteNumber, type Precheck, PrecheckAnnotationId, mayHoldUnstorableText, nestsDeeperThan, unstorable, unstorableItem, unstorableItems } from "./input-checks.ts"
import { safeError } from "./log-safe.ts"
import { unavailableAnswer } from "./unavailable.ts"
import { detailItems, invalidJsonItem } from "./validation.ts"

export const VERSION_HEADER = "x-service-api-version"

interface Route {
  readonly method: string
  readonly pattern: RegExp
  readonly params: ReadonlyArray<string>
  readonly endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
}

/** Every endpoint of the Api as a matcher, used only when a request failed before its handler ran. */
const routesOf = (api: HttpApi.HttpApi.Any): ReadonlyArray<Route> => {
  const routes: Array<Route> = []
  HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
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
        endpoint: endpoint as unknown as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
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

const pathnameOf = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

const matchRoute = (routes: ReadonlyArray<Route>, method: string, pathname: string) => {
  for (const route of routes) {
    if (route.method !== method) continue
    const m = route.pattern.exec(pathname)
    if (m === null) continue
    const params: Record<string, string> = {}
    route.params.forEach((name, i) => (params[name] = safeDecodeURIComponent(m[i + 1]!)))
    return { route, params }
  }
  return undefined
}

const searchParamsRecord = (url: string): Record<string, string | Array<string>> => {
  // No prototype: a parameter named "constructor" or "__proto__" is a parameter like any other.
  const out: Record<string, string | Array<string>> = Object.create(null)
  const q = url.indexOf("?")
  if (q === -1) return out
  for (const [key, value] of new URLSearchParams(url.slice(q + 1))) {
    const previous = out[key]
    out[key] = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value]
  }
  return out
}

/** Query values arrive as strings; a key the schema expects as a list gets a one-element list. */
const normalizeQuery = (
  params: Record<string, string | Array<string>>,
  schema: Schema.Schema.Any
): Record<string, unknown> => {
  const ast = schema.ast
  const out: Record<string, unknown> = Object.create(null)
  for (const [key, value] of Object.entries(params)) {
    out[key] = Array.isArray(value) || !expectsArray(ast, key) ? value : [value]
  }
  return out
}

const expectsArray = (ast: Schema.Schema.Any["ast"], key: string): boolean => {
  switch (ast._tag) {
    case "TypeLiteral": {
      const ps = ast.propertySignatures.find((p) => p.name === key)
      return ps !== undefined && isArrayType(ps.type)
    }
    case "Transformation":
      return expectsArray(ast.from, key)
    case "Refinement":
      return expectsArray(ast.from, key)
    default:
      return false
  }
}

const isArrayType = (ast: Schema.Schema.Any["ast"]): boolean => {
  switch (ast._tag) {
    case "TupleType":
      return true
    case "Union":
      return ast.types.some(isArrayType)
    case "Transformation":
    case "Refinement":
      return isArrayType(ast.from)
    default:
      return false
  }
}

const allErrors = { errors: "all" } as const

const decodeFailures = (schema: Schema.Schema.Any, input: unknown) =>
  Either.match(Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown>, allErrors)(input), {
    onLeft: (error) => Option.some(error.issue),
    onRight: () => Option.none()
  })

/**
 * Decodes path, headers, query and body again, each on its own and reporting every problem, to say
 * where the request went wrong. A path id that is not a UUID matches no route in the reference: 404.
 */
const explainDecodeFailure = (routes: ReadonlyArray<Route>, request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    const match = matchRoute(routes, request.method, pathnameOf(request.url))
    // The router took the path for a route it is not (`/artifacts//latest` read as
    // `/artifacts/latest`, an id that is not one): nothing is there.
    if (match === undefined) return Option.some<NotFound | ValidationError>(new NotFound({ detail: "Not Found" }))
    const { endpoint } = match.route
    const items: Array<ValidationDetailItem> = []
    if (Option.isSome(endpoint.pathSchema)) {
      const issue = decodeFailures(endpoint.pathSchema.value, match.params)
      if (Option.isSome(issue)) {
        const pathItems = detailItems("path", issue.value)
        if (pathItems.some((i) => i.type === "uuid_parsing")) {
          return Option.some(new NotFound({ detail: "Not Found" }))
        }
        items.push(...pathItems)
      }
    }
    if (Option.isSome(endpoint.headersSchema)) {
      const issue = decodeFailures(endpoint.headersSchema.value, request.headers)
      if (Option.isSome(issue)) items.push(...detailItems("header", issue.value))
    }
    const query = searchParamsRecord(request.url)
    if (Option.isSome(endpoint.urlParamsSchema)) {
      const schema = endpoint.urlParamsSchema.value
      const issue = decodeFailures(schema, normalizeQuery(query, schema))
      if (Option.isSome(issue)) items.push(...detailItems("query", issue.value))
    }
    if (Option.isSome(endpoint.payloadSchema)) {
      const schema = endpoint.payloadSchema.value
      const hasBody = request.method !== "GET" && request.method !== "HEAD" && request.method !== "DELETE"
      const input = hasBody ? yield* Effect.orElseSucceed(request.json, () => undefined) : normalizeQuery(query, schema)
      if (input === null) {
        // A JSON `null` body is no body, as the reference reads it.
        items.push({ loc: ["body"], type: "missing", msg: "Field required", input: null })
      } else {
        const issue = decodeFailures(schema, input ?? {})
        if (Option.isSome(issue)) items.push(...detailItems(hasBody ? "body" : "query", issue.value))
      }
    }
    return items.length === 0 ? Option.none() : Option.some(new ValidationError({ detail: items }))
  })

const checkVersionHeader = (request: HttpServerRequest.HttpServerRequest) => {
  const value = request.headers[VERSION_HEADER]
  if (value === undefined || value === "") return Effect.void
  const parts = value.split(".")
  if (parts.length !== 3 || parts.some((p) => !/^\d+$/.test(p))) {
    return Effect.fail(
      new BadRequest({
        detail: `Invalid ${VERSION_HEADER} header format. Expected header in format 'x.y.z' but received ${value}`
      })
    )
  }
  const major = API_VERSION.split(".")[0]
  if (String(Number(parts[0])) !== major) {
    return Effect.fail(
      new BadRequest({
        detail: `The request specified API version ${value} but this server serves API version ${API_VERSION}; the major versions must match.`
      })
    )
  }
  return Effect.void
}

/** The value at `path` inside `value`, if there is one. */
const valueAt = (value: unknown, path: ReadonlyArray<string | number>): unknown => {
  let at = value
  for (const key of path) {
    if (at === null || typeof at !== "object" || !Object.hasOwn(at, key)) return undefined
    at = (at as Record<string | number, unknown>)[key]
  }
  return at
}

/**
 * A handler's rule checks the decoded body, while the reference's validators report the value as
 * it was sent: the `input` of each body item a handler left without one is the value at its `loc`
 * in the request's body.
 */
const withInputs = (request: HttpServerRequest.HttpServerRequest, error: ValidationError) => {
  const detail = error.detail
  if (typeof detail === "string" || !detail.some((i) => i.input === undefined && i.loc[0] === "body")) return Effect.succeed(error)
  return Effect.map(Effect.orElseSucceed(request.json, () => undefined), (body) =>
    body === undefined
      ? error
      : new ValidationError({
        detail: detail.map((i) => {
          if (i.input !== undefined || i.loc[0] !== "body") return i
          const input = valueAt(body, i.loc.slice(1))
          return input === undefined ? i : { ...i, input }
        })
      }))
}

const hasBody = (method: string) => method === "POST" || method === "PUT" || method === "PATCH"

/**
 * What the schemas cannot check, checked before the request is decoded: a body nested deeper than
 * the reference's parser goes is a 400 (its answer); a NUL character or an unpaired surrogate in a
 * path parameter, a query value or any string or key of the body is a 422 at that place, as
 * PostgreSQL can store neither. Requests for no known route are left to the router (404/405), and
 * a path parameter that is not even of its type (an id that is not a UUID) to the route's decoding.
 */
const checkInput = (routes: ReadonlyArray<Route>, request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    const match = matchRoute(routes, request.method, pathnameOf(request.url))
    if (match === undefined) return
    const { endpoint } = match.route
    const items: Array<ValidationDetailItem> = []
    const pathSchema = endpoint.pathSchema
    if (Option.isSome(pathSchema) && Option.isNone(decodeFailures(pathSchema.value, match.params))) {
      for (const [name, value] of Object.entries(match.params)) {
        const msg = unstorable(value)
        if (msg !== undefined) items.push(unstorableItem(["path", name], value, msg))
      }
    }
    for (const [key, value] of Object.entries(searchParamsRecord(request.url))) {
      for (const text of Array.isArray(value) ? value : [value]) {
        const msg = unstorable(text)
        if (msg !== undefined) items.push(unstorableItem(["query", key], text, msg))
      }
    }
    if (Option.isSome(endpoint.payloadSchema) && hasBody(request.method)) {
      // The text is read once and kept: the route's own decoding reads the same text.
      const text = yield* Effect.orElseSucceed(request.text, () => "")
      if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
        return yield* Effect.fail(new BadRequest({ detail: "There was an error parsing the body" }))
      }
      const annotations = endpoint.payloadSchema.value.ast.annotations
      const cleansText = annotations[CleansTextAnnotationId] === true
      const precheck = annotations[PrecheckAnnotationId] as Precheck | undefined
      const strings = !cleansText && mayHoldUnstorableText(text)
      if (strings || mayHoldNonFiniteNumber(text) || precheck !== undefined) {
        const parsed = Either.try(() => JSON.parse(text) as unknown)
        if (Either.isRight(parsed)) {
          items.push(...unstorableItems(["body"], parsed.right, { strings }))
          if (precheck !== undefined) items.push(...precheck(parsed.right))
        }
      }
    }
    if (items.length > 0) return yield* Effect.fail(new ValidationError({ detail: items }))
  })

/**
 * The 422 for a body of a Content-Type its endpoint does not decode (./content-type.ts), answered
 * before the body is read; the connection then closes, so the body never is.
 */
const refuseContentType = (routes: ReadonlyArray<Route>, request: HttpServerRequest.HttpServerRequest) => {
  const match = matchRoute(routes, request.method, pathnameOf(request.url))
  const payload = match?.route.endpoint.payloadSchema
  if (payload === undefined || Option.isNone(payload)) return undefined
  const problem = contentTypeProblem(request.method, request.headers, payload.value.ast)
  if (problem === undefined) return undefined
  return errorResponse(
    ValidationErrorResponse,
    new ValidationError({ detail: [problem] }),
    announcesBody(request.headers) ? { connection: "close" } : {}
  )
}

/** A request whose values (the items of its filters' lists, the rows it writes) need one statement too many parameters. */
const tooManyValues = (error: TooManyParameters) =>
  new ValidationError({
    detail: [{
      loc: ["body"],
      type: "value_error",
      msg: `The request holds too many values for one database statement: it needs ${error.count} parameters, and PostgreSQL takes at most ${MAX_STATEMENT_PARAMETERS}. Send fewer values (shorter lists in the filter), or split the request.`
    }]
  })

const isJsonDecodeDefect = (defect: unknown): defect is HttpServerError.RequestError =>
  HttpServerError.isServerError(defect) && defect._tag === "RequestError" && defect.reason === "Decode"

type ApiFailure = ValidationError | NotFound | MethodNotAllowed | BadRequest

const internalError = HttpServerResponse.unsafeJson({ exception_message: "Internal Server Error" }, { status: 500 })

const isDecodeError = (error: unknown) =>
  typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "HttpApiDecodeError"

const isRouteNotFound = (error: unknown) => HttpServerError.isServerError(error) && error._tag === "RouteNotFound"

/** The Api middleware Layer for `api`: version header, decode errors, unknown routes, bad JSON. */
export const apiMiddleware = <Api extends HttpApi.HttpApi.Any>(api: Api) => {
  const routes = routesOf(api)

  const recover = (
    request: HttpServerRequest.HttpServerRequest,
    error: unknown
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, ApiFailure | unknown> => {
    if (isDecodeError(error)) {
      return Effect.flatMap(explainDecodeFailure(routes, request), (explained) =>
        Option.isSome(explained) ? Effect.fail(explained.value) : Effect.die(error)
      )
    }
    if (isRouteNotFound(error)) {
      const pathname = pathnameOf(request.url)
      const otherMethod = routes.some((r) => r.method !== request.method && r.pattern.test(pathname))
      return otherMethod
        ? Effect.fail(new MethodNotAllowed({ detail: "Method Not Allowed" }))
        : Effect.fail(new NotFound({ detail: "Not Found" }))
    }
    const unavailable = unavailableAnswer(error)
    if (Option.isSome(unavailable)) return unavailable.value
    return Effect.fail(error)
  }

  /**
   * Malformed JSON is a 422; a write that broke a unique or foreign key constraint (a reference to
   * nothing, a taken key), wherever it happened, the reference's 409; a statement that failed
   * because the database is unavailable a 503 with Retry-After; anything else a logged 500.
   */
  const recoverDefect = (defect: unknown): Effect.Effect<HttpServerResponse.HttpServerResponse, ValidationError | Conflict> => {
    if (isJsonDecodeDefect(defect)) {
      return Effect.fail(
        new ValidationError({
          detail: [invalidJsonItem(defect.cause instanceof Error ? defect.cause.message : String(defect.cause))]
        })
      )
    }
    if (isIntegrityViolation(defect)) return Effect.fail(integrityConflict())
    // Refused before it was sent (../database/statements.ts): the request asked for too many values.
    if (isTooManyParameters(defect)) return Effect.fail(tooManyValues(defect))
    const unavailable = unavailableAnswer(defect)
    if (Option.isSome(unavailable)) return unavailable.value
    // A value the database refused (out of its column's range, not representable): the request's
    // fault, whatever let it through the schemas. The statement changed nothing.
    if (isDataException(defect)) {
      const message = databaseMessage(defect)
      return Effect.zipRight(
        Effect.logWarning("The database refused a value of a request", Cause.die(safeError(defect))),
        Effect.fail(new ValidationError({ detail: message === undefined ? "Invalid input." : `Invalid input: ${message}` }))
      )
    }
    return Effect.as(Effect.logError("Unexpected failure while handling a request", Cause.die(safeError(defect))), internalError)
  }

  const middleware = (app: HttpApp.Default): HttpApp.Default<unknown> =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      yield* checkVersionHeader(request)
      const refused = refuseContentType(routes, request)
      if (refused !== undefined) return refused
      // Routing and decoding failures are typed away in HttpApp.Default; they still arrive here.
      // A handler's 422 items say what was sent where they name no input (see withInputs).
      const handled = Effect.catchIf(
        app as HttpApp.Default<unknown>,
        (error): error is ValidationError => error instanceof ValidationError,
        (error) => Effect.flatMap(withInputs(request, error), Effect.fail)
      )
      return yield* Effect.zipRight(checkInput(routes, request), handled).pipe(
        Effect.catchAll((error) => recover(request, error)),
        Effect.catchAllDefect(recoverDefect)
      )
    })
  return HttpApiBuilder.middleware(middleware as unknown as HttpApiBuilder.MiddlewareFn<never>)
}
