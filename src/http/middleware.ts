/**
 * Api-level middleware: the version header check, and the one place where failures that happen
 * before a handler runs (decoding, routing, malformed JSON) become the reference's answers.
 */
import {
  type HttpApi,
  HttpApiBuilder,
  type HttpApp,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { Cause, Context, Effect, Either, Layer, Option, Schema } from "effect"
import { databaseMessage, isDataException } from "../database/errors.ts"
import { isTooManyParameters, MAX_STATEMENT_PARAMETERS, type TooManyParameters } from "../database/statements.ts"
import { BadRequest, NotFound, ValidationError } from "../domain/errors.ts"
import { errorResponse, MethodNotAllowed, MethodNotAllowedResponse, ValidationErrorResponse } from "./errors.ts"
import { type ValidationDetailItem } from "../domain/problems.ts"
import { Unversioned, VERSION_HEADER, versionHeaderProblem } from "./api-version.ts"
import { announcesBody, contentTypeProblem } from "./content-type.ts"
import { CleansTextAnnotationId, MAX_JSON_DEPTH, mayHoldNonFiniteNumber, type Precheck, PrecheckAnnotationId, mayHoldUnstorableText, nestsDeeperThan, unstorable, unstorableItem, unstorableItems } from "./input-checks.ts"
import { safeError } from "./log-safe.ts"
import { pathnameOf } from "./paths.ts"
import { unavailableAnswer } from "./unavailable.ts"
import { Settings, type SettingsValue } from "../settings/settings.ts"
import { allowedMethods, matchRoute, type Route, type RouteMatch, routesOf } from "./routes.ts"
import { detailItems, invalidJsonItem } from "./validation.ts"

export { VERSION_HEADER } from "./api-version.ts"

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
 * The answer for a path no route of the request's method takes, as the reference's router gives
 * it: 405 with the methods that do take it (`Allow`), or 404.
 */
const routeMiss = (routes: ReadonlyArray<Route>, pathname: string): Effect.Effect<HttpServerResponse.HttpServerResponse, NotFound> => {
  const allowed = allowedMethods(routes, pathname)
  return allowed.length === 0
    ? Effect.fail(new NotFound({ detail: "Not Found" }))
    : Effect.succeed(
      errorResponse(MethodNotAllowedResponse, new MethodNotAllowed({ detail: "Method Not Allowed" }), { allow: allowed.join(", ") })
    )
}

/**
 * Decodes path, headers, query and body again, each on its own and reporting every problem, to say
 * where the request went wrong. A request the router gave to a route that does not take its path
 * (an id that is not a UUID, `/artifacts//latest` read as `/artifacts/latest`) is answered as the
 * reference's router answers it: 405 or 404.
 */
const explainDecodeFailure = (
  routes: ReadonlyArray<Route>,
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<HttpServerResponse.HttpServerResponse | undefined, NotFound | ValidationError> =>
  Effect.gen(function* () {
    const pathname = pathnameOf(request.url)
    const match = matchRoute(routes, request.method, pathname)
    if (match === undefined) return yield* routeMiss(routes, pathname)
    const { endpoint } = match.route
    const items: Array<ValidationDetailItem> = []
    if (Option.isSome(endpoint.pathSchema)) {
      const issue = decodeFailures(endpoint.pathSchema.value, match.params)
      if (Option.isSome(issue)) items.push(...detailItems("path", issue.value))
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
    if (items.length > 0) return yield* new ValidationError({ detail: items })
    // Nothing found wrong with the request: the caller reports the failure as it was.
    return undefined
  })

/** The version header of a request for `match` (./api-version.ts): the 400 when it is refused. */
const versionHeaderRefusal = (match: RouteMatch | undefined, request: HttpServerRequest.HttpServerRequest) => {
  if (match === undefined || Context.getOption(match.route.endpoint.annotations, Unversioned)._tag === "Some") return undefined
  const problem = versionHeaderProblem(request.headers[VERSION_HEADER])
  return problem === undefined ? undefined : new BadRequest({ detail: problem })
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
 * PostgreSQL can store neither. Requests no route takes are left to the router (404/405), and a
 * path parameter that is not of its type to the route's decoding.
 */
const checkInput = (
  match: RouteMatch | undefined,
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<void, BadRequest | ValidationError> => {
  if (match === undefined) return Effect.void
  const { endpoint } = match.route
  const items: Array<ValidationDetailItem> = []
  const pathSchema = endpoint.pathSchema
  if (Option.isSome(pathSchema)) {
    const unstorableParams: Array<ValidationDetailItem> = []
    for (const [name, value] of Object.entries(match.params)) {
      const msg = unstorable(value)
      if (msg !== undefined) unstorableParams.push(unstorableItem(["path", name], value, msg))
    }
    // Only a parameter of its type is reported here (decoded only then: most requests have none).
    if (unstorableParams.length > 0 && Option.isNone(decodeFailures(pathSchema.value, match.params))) items.push(...unstorableParams)
  }
  if (request.url.includes("?")) {
    for (const [key, value] of Object.entries(searchParamsRecord(request.url))) {
      for (const text of Array.isArray(value) ? value : [value]) {
        const msg = unstorable(text)
        if (msg !== undefined) items.push(unstorableItem(["query", key], text, msg))
      }
    }
  }
  const refused = (): Effect.Effect<void, BadRequest | ValidationError> =>
    items.length > 0 ? Effect.fail(new ValidationError({ detail: items })) : Effect.void
  if (Option.isNone(endpoint.payloadSchema) || !hasBody(request.method)) return refused()
  const payload = endpoint.payloadSchema.value
  // The text is read once and kept: the route's own decoding reads the same text.
  return Effect.flatMap(Effect.orElseSucceed(request.text, () => ""), (text): Effect.Effect<void, BadRequest | ValidationError> => {
    if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
      return Effect.fail(new BadRequest({ detail: "There was an error parsing the body" }))
    }
    const annotations = payload.ast.annotations
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
    return refused()
  })
}

/**
 * The 422 for a body of a Content-Type its endpoint does not decode (./content-type.ts), answered
 * before the body is read; the connection then closes, so the body never is.
 */
const refuseContentType = (match: RouteMatch | undefined, request: HttpServerRequest.HttpServerRequest) => {
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

/**
 * The Api middleware Layer for `api`: version header, decode errors, unknown routes, bad JSON, an
 * unavailable database (logged as the Settings say).
 */
export const apiMiddleware = <Api extends HttpApi.HttpApi.Any>(api: Api) =>
  Layer.unwrapEffect(Effect.map(Settings, (settings) => middlewareFor(api, settings)))

const middlewareFor = <Api extends HttpApi.HttpApi.Any>(api: Api, settings: SettingsValue) => {
  const routes = routesOf(api)

  const recover = (
    request: HttpServerRequest.HttpServerRequest,
    error: unknown
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, ApiFailure | unknown> => {
    if (isDecodeError(error)) {
      return Effect.flatMap(explainDecodeFailure(routes, request), (explained) =>
        explained === undefined ? Effect.die(error) : Effect.succeed(explained)
      )
    }
    if (isRouteNotFound(error)) return routeMiss(routes, pathnameOf(request.url))
    const unavailable = unavailableAnswer(settings, error)
    if (Option.isSome(unavailable)) return unavailable.value
    return Effect.fail(error)
  }

  /**
   * Malformed JSON is a 422; a statement that failed because the database is unavailable a 503 with
   * Retry-After; a value the database refused a 422; anything else a logged 500. A constraint
   * violation that means something (a taken name, a reference to nothing) is the area's own error
   * before it gets here; one that reaches this point is a bug, answered 500 like any other.
   */
  const recoverDefect = (defect: unknown): Effect.Effect<HttpServerResponse.HttpServerResponse, ValidationError> => {
    if (isJsonDecodeDefect(defect)) {
      return Effect.fail(
        new ValidationError({
          detail: [invalidJsonItem(defect.cause instanceof Error ? defect.cause.message : String(defect.cause))]
        })
      )
    }
    // Refused before it was sent (../database/statements.ts): the request asked for too many values.
    if (isTooManyParameters(defect)) return Effect.fail(tooManyValues(defect))
    const unavailable = unavailableAnswer(settings, defect)
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
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const match = matchRoute(routes, request.method, pathnameOf(request.url))
      const versionRefused = versionHeaderRefusal(match, request)
      if (versionRefused !== undefined) return Effect.fail(versionRefused)
      const refused = refuseContentType(match, request)
      if (refused !== undefined) return Effect.succeed(refused)
      // Routing and decoding failures are typed away in HttpApp.Default; they still arrive here.
      // A handler's 422 items say what was sent where they name no input (see withInputs).
      const handled = Effect.catchIf(
        app as HttpApp.Default<unknown>,
        (error): error is ValidationError => error instanceof ValidationError,
        (error) => Effect.flatMap(withInputs(request, error), Effect.fail)
      )
      return Effect.zipRight(checkInput(match, request), handled).pipe(
        Effect.catchAll((error) => recover(request, error)),
        Effect.catchAllDefect(recoverDefect)
      )
    })
  return HttpApiBuilder.middleware(middleware as unknown as HttpApiBuilder.MiddlewareFn<never>)
}
