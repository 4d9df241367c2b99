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

export const ValidationErrorResponse = httpError(ValidationError, 422, { identifier: "HTTPValidationError", detail: ValidationDetail })
export const NotFoundResponse = httpError(NotFound, 404, { identifier: "NotFound" })
export const ConflictResponse = httpError(Conflict, 409, { identifier: "Conflict" })
export const BadRequestResponse = httpError(BadRequest, 400, { identifier: "BadRequest" })
export const ForbiddenResponse = httpError(Forbidden, 403, { identifier: "Forbidden" })
export const GoneResponse = httpError(Gone, 410, { identifier: "Gone" })
export const MethodNotAllowedResponse = httpError(MethodNotAllowed, 405, { identifier: "MethodNotAllowed" })
export const ServiceUnavailableResponse = httpError(ServiceUnavailable, 503, { identifier: "ServiceUnavailable" })
export const UnauthorizedResponse = httpError(Unauthorized, 401, { identifier: "Unauthorized" })
export const PayloadTooLargeResponse = httpError(PayloadTooLarge, 413, { identifier: "PayloadTooLarge" })
export const LockedResponse = httpError(Locked, 423, { identifier: "Locked" })
export const RequestTimeoutResponse = httpError(RequestTimeout, 408, { identifier: "RequestTimeout" })
export const RequestHeaderFieldsTooLargeResponse = httpError(RequestHeaderFieldsTooLarge, 431, { identifier: "RequestHeaderFieldsTooLarge" })

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

