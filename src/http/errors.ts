/**
 * The errors every endpoint may answer with, declared once on the Api. On the wire each is just
 * the reference's body (`{"detail": …}`): the class tag never leaves the server.
 */
import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Schema } from "effect"

/** One entry of a 422 answer, in the reference's shape. */
export const ValidationDetailItem = Schema.Struct({
  loc: Schema.Array(Schema.Union(Schema.String, Schema.Number)),
  msg: Schema.String,
  type: Schema.String,
  input: Schema.optional(Schema.Unknown),
  ctx: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}).annotations({ identifier: "ValidationErrorItem" })
export type ValidationDetailItem = typeof ValidationDetailItem.Type

/**
 * `detail` is either the reference's list of field problems or, for rules a handler checks itself
 * (e.g. "Invalid limit: must be less than or equal to 200."), a plain message.
 */
const ValidationDetail = Schema.Union(Schema.Array(ValidationDetailItem), Schema.String)

export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  detail: ValidationDetail
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { detail: Schema.String }) {}

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", { detail: Schema.String }) {}

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", { detail: Schema.String }) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", { detail: Schema.String }) {}

export class Gone extends Schema.TaggedError<Gone>()("Gone", { detail: Schema.String }) {}

export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", {
  detail: Schema.String
}) {}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", { detail: Schema.String }) {}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  detail: Schema.String
}) {}

export class RequestTimeout extends Schema.TaggedError<RequestTimeout>()("RequestTimeout", { detail: Schema.String }) {}

export class RequestHeaderFieldsTooLarge extends Schema.TaggedError<RequestHeaderFieldsTooLarge>()(
  "RequestHeaderFieldsTooLarge",
  { detail: Schema.String }
) {}

/** A concurrency limit is full (answered with Retry-After by the handlers that take slots). */
export class Locked extends Schema.TaggedError<Locked>()("Locked", { detail: Schema.String }) {}

export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  detail: Schema.String
}) {}

/** The wire form of an error class: `{"detail": …}` with the given status, decoding back to the class. */
const wire = <Self extends { readonly detail: D }, D, DI>(
  errorClass: Schema.Schema<Self, any> & (new(props: { readonly detail: D }) => Self),
  detail: Schema.Schema<D, DI>,
  status: number,
  identifier: string
) =>
  Schema.transform(Schema.Struct({ detail }), Schema.typeSchema(errorClass), {
    strict: false,
    decode: (body) => new errorClass({ detail: body.detail }),
    encode: (error) => ({ detail: error.detail })
  }).annotations(HttpApiSchema.annotations({ status, identifier }))

export const ValidationErrorResponse = wire(ValidationError, ValidationDetail, 422, "HTTPValidationError")
export const NotFoundResponse = wire(NotFound, Schema.String, 404, "NotFound")
export const ConflictResponse = wire(Conflict, Schema.String, 409, "Conflict")
export const BadRequestResponse = wire(BadRequest, Schema.String, 400, "BadRequest")
export const ForbiddenResponse = wire(Forbidden, Schema.String, 403, "Forbidden")
export const GoneResponse = wire(Gone, Schema.String, 410, "Gone")
export const MethodNotAllowedResponse = wire(MethodNotAllowed, Schema.String, 405, "MethodNotAllowed")
export const ServiceUnavailableResponse = wire(ServiceUnavailable, Schema.String, 503, "ServiceUnavailable")
export const UnauthorizedResponse = wire(Unauthorized, Schema.String, 401, "Unauthorized")
export const PayloadTooLargeResponse = wire(PayloadTooLarge, Schema.String, 413, "PayloadTooLarge")
export const LockedResponse = wire(Locked, Schema.String, 423, "Locked")
export const RequestTimeoutResponse = wire(RequestTimeout, Schema.String, 408, "RequestTimeout")
export const RequestHeaderFieldsTooLargeResponse = wire(RequestHeaderFieldsTooLarge, Schema.String, 431, "RequestHeaderFieldsTooLarge")

/**
 * The answer an error class gives where no Api encodes it (before routing, in front of the Api):
 * the same body and status as its wire form, plus `headers`.
 */
export const errorResponse = <A, I>(
  schema: Schema.Schema<A, I>,
  error: A,
  headers: Record<string, string> = {}
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(Schema.encodeSync(schema)(error), { status: HttpApiSchema.getStatusError(schema), headers })

/** The reference's answer when a write names an object that does not exist or breaks a unique key. */
export const integrityConflict = () =>
  new Conflict({
    detail:
      "Data integrity conflict. This usually means a unique or foreign key constraint was violated. See server logs for details."
  })
