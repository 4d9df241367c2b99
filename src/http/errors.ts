/**
 * The errors every endpoint may answer with, declared once on the Api: the domain's (../domain/errors.ts)
 * and the protocol's own (below), each given its status. On the wire each is just the reference's
 * body (`{"detail": …}`): the class tag never leaves the server.
 */
import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Schema } from "effect"
import { BadRequest, Conflict, Forbidden, Gone, httpError, Locked, NotFound, ValidationDetail, ValidationError } from "../domain/errors.ts"

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

export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  detail: Schema.String
}) {}

const wire = <Self extends { readonly detail: D }, D, DI>(
  errorClass: Schema.Schema<Self, any> & (new(props: { readonly detail: D }) => Self),
  detail: Schema.Schema<D, DI>,
  status: number,
  identifier: string
) => httpError(errorClass, status, { identifier, detail })

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

