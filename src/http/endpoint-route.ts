/**
 * An endpoint's decoding, handler and encoding as the platform's route runs them, without the
 * context its group gives each request.
 *
 * The platform's group runs every handler inside its group's context merged into the request's
 * (`Effect.mapInputContext`): a new context and a change of the fiber's context around the handler,
 * which changes every fiber-local value's map twice. For `GET /version` that was a third of the
 * server's CPU a request (docs/performance.md, "Seventeenth round"). A group made with `apiGroup`
 * (./group.ts) keeps nothing in that context but the settings, which Baton's request path puts in
 * the request's own context (./api-path.ts): there its endpoints run as made here, the same steps
 * in the same order (the path, the payload, the headers and the query decoded by the endpoint's
 * schemas, a decoding failure refailed as the platform's `HttpApiDecodeError`, the success encoded
 * by the endpoint's success schema), with the handler called as it is. An endpoint with middlewares
 * of its own or its group's, or with a multipart payload, runs the platform's way.
 */
import {
  type HttpApiBuilder,
  type HttpApiEndpoint,
  HttpApiError,
  type HttpApiGroup,
  HttpApiSchema,
  HttpMethod,
  HttpRouter,
  HttpServerRequest,
  HttpServerResponse,
  UrlParams
} from "@effect/platform"
import { Context, Effect, Fiber, Option, ParseResult, Schema, type SchemaAST } from "effect"

type Item = HttpApiBuilder.Handlers.Item<unknown, unknown>

/**
 * A request's payload as the platform reads it: the query for a method without a body, else by its
 * Content-Type (a multipart body without limits of the endpoint's: its endpoints run the platform's way).
 */
const requestPayload = (request: HttpServerRequest.HttpServerRequest, urlParams: ReadonlyRecord): Effect.Effect<unknown> => {
  if (!HttpMethod.hasBody(request.method)) return Effect.succeed(urlParams)
  const contentType = request.headers["content-type"] ? request.headers["content-type"].toLowerCase().trim() : "application/json"
  if (contentType.includes("application/json")) return Effect.orDie(request.json)
  // What it needs (a scope, a file system) is the request's context's, as on the platform's route.
  if (contentType.includes("multipart/form-data")) return Effect.orDie(request.multipart) as Effect.Effect<unknown>
  if (contentType.includes("x-www-form-urlencoded")) return Effect.map(Effect.orDie(request.urlParamsBody), UrlParams.toRecord)
  if (contentType.startsWith("text/")) return Effect.orDie(request.text)
  return Effect.map(Effect.orDie(request.arrayBuffer), (buffer) => new Uint8Array(buffer))
}

type ReadonlyRecord = Readonly<Record<string, string | ReadonlyArray<string>>>

/** Whether the schema takes a single string at `key` (else a lone query value becomes a list), as the platform decides it. */
const isSingleStringType = (ast: SchemaAST.AST, key?: string): boolean => {
  switch (ast._tag) {
    case "StringKeyword":
    case "Literal":
    case "TemplateLiteral":
    case "Enums":
      return true
    case "TypeLiteral": {
      if (key !== undefined) {
        const ps = ast.propertySignatures.find((ps) => ps.name === key)
        return ps !== undefined
          ? isSingleStringType(ps.type, key)
          : ast.indexSignatures.some((is) => Schema.is(Schema.make(is.parameter))(key) && isSingleStringType(is.type))
      }
      return false
    }
    case "Union":
      return ast.types.some((type) => isSingleStringType(type, key))
    case "Suspend":
      return isSingleStringType(ast.f(), key)
    case "Refinement":
    case "Transformation":
      return isSingleStringType(ast.from, key)
  }
  return false
}

const normalizeUrlParams = (params: ReadonlyRecord, ast: SchemaAST.AST): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const key in params) {
    const value = params[key]
    out[key] = Array.isArray(value) || isSingleStringType(ast, key) ? value : [value]
  }
  return out
}

const responseSchema = Schema.declare(HttpServerResponse.isServerResponse)

/** A success value encoded to its response: status, and body by the schema's encoding. */
const toResponse = (data: unknown, _: unknown, ast: SchemaAST.Transformation) => {
  const status = HttpApiSchema.getStatusSuccessAST(ast.to)
  if (HttpApiSchema.isVoid(ast.to)) return ParseResult.succeed(HttpServerResponse.empty({ status }))
  const encoding = HttpApiSchema.getEncoding(ast.to)
  switch (encoding.kind) {
    case "Json":
      return Effect.mapError(
        HttpServerResponse.json(data, { status, contentType: encoding.contentType }),
        (error) => new ParseResult.Type(ast, error, "Could not encode to JSON")
      )
    case "Text":
      return ParseResult.succeed(HttpServerResponse.text(data as string, { status, contentType: encoding.contentType }))
    case "Uint8Array":
      return ParseResult.succeed(HttpServerResponse.uint8Array(data as Uint8Array, { status, contentType: encoding.contentType }))
    case "UrlParams":
      return ParseResult.succeed(HttpServerResponse.urlParams(data as UrlParams.Input, { status, contentType: encoding.contentType }))
  }
}

const decodeForbidden = (_: unknown, __: unknown, ast: SchemaAST.AST) =>
  ParseResult.fail(new ParseResult.Forbidden(ast, _, "Encode only schema"))

/** The endpoint's success schema, each of its members encoding to a response (the platform's success schema). */
const successSchema = (schema: Schema.Schema.Any): Schema.Schema<unknown, HttpServerResponse.HttpServerResponse> => {
  const schemas = new Set<Schema.Schema.Any>()
  HttpApiSchema.deunionize(schemas, schema)
  return Schema.Union(...Array.from(schemas, (member) =>
    Schema.transformOrFail(responseSchema, member as Schema.Schema<unknown, unknown>, {
      decode: decodeForbidden,
      encode: toResponse as never
    }))) as unknown as Schema.Schema<unknown, HttpServerResponse.HttpServerResponse>
}

/**
 * The route handler of `item` (an endpoint of `group` and its handler), or undefined when it must
 * run the platform's way (middlewares, a multipart payload). It reads the request, its route and
 * its query from the fiber's context, as the platform's does.
 */
export const endpointHandler = (
  group: HttpApiGroup.HttpApiGroup.AnyWithProps,
  item: Item
): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown> | undefined => {
  const endpoint = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  if (endpoint.middlewares.size > 0 || group.middlewares.size > 0) return undefined
  const payloadAst = Option.map(endpoint.payloadSchema, (schema) => schema.ast)
  if (Option.isSome(payloadAst) && (HttpApiSchema.getMultipart(payloadAst.value) !== undefined || HttpApiSchema.getMultipartStream(payloadAst.value) !== undefined)) {
    return undefined
  }
  const decodePath = Option.map(endpoint.pathSchema, (schema) => Schema.decodeUnknown(schema as Schema.Schema<unknown, unknown>))
  const decodePayload = item.withFullRequest
    ? Option.none()
    : Option.map(endpoint.payloadSchema, (schema) => Schema.decodeUnknown(schema as Schema.Schema<unknown, unknown>))
  const decodeHeaders = Option.map(endpoint.headersSchema, (schema) => Schema.decodeUnknown(schema as Schema.Schema<unknown, unknown>))
  const decodeUrlParams = Option.map(endpoint.urlParamsSchema as Option.Option<Schema.Schema<unknown, unknown>>, (schema) => {
    const decode = Schema.decodeUnknown(schema)
    return (params: ReadonlyRecord) => decode(normalizeUrlParams(params, schema.ast))
  })
  const encodeSuccess = Schema.encode(successSchema(endpoint.successSchema))
  const handler = item.handler as (request: Record<string, unknown>) => Effect.Effect<unknown, unknown, unknown>
  return Effect.gen(function*() {
    const context = Option.getOrThrow(Fiber.getCurrentFiber()).currentContext
    const httpRequest = Context.unsafeGet(context, HttpServerRequest.HttpServerRequest)
    const routeContext = Context.unsafeGet(context, HttpRouter.RouteContext)
    const urlParams = Context.unsafeGet(context, HttpServerRequest.ParsedSearchParams) as ReadonlyRecord
    const request: Record<string, unknown> = { request: httpRequest }
    if (decodePath._tag === "Some") request.path = yield* decodePath.value(routeContext.params)
    if (decodePayload._tag === "Some") {
      request.payload = yield* Effect.flatMap(requestPayload(httpRequest, urlParams), decodePayload.value)
    }
    if (decodeHeaders._tag === "Some") request.headers = yield* decodeHeaders.value(httpRequest.headers)
    if (decodeUrlParams._tag === "Some") request.urlParams = yield* decodeUrlParams.value(urlParams)
    const response = yield* handler(request)
    return HttpServerResponse.isServerResponse(response) ? response : yield* encodeSuccess(response)
  }).pipe(Effect.catchIf(ParseResult.isParseError, HttpApiError.HttpApiDecodeError.refailParseError)) as Effect.Effect<
    HttpServerResponse.HttpServerResponse,
    unknown,
    unknown
  >
}
