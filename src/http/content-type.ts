/**
 * Which bodies an endpoint decodes, told from the Content-Type header before a byte of the body is
 * read. Endpoints take JSON: `application/json` or any `application/<something>+json` (as the
 * reference reads them), with any parameters (`charset=utf-8`). A few endpoints that take one string
 * (template validation) also take its text as `text/plain`. Anything else (a form, multipart, XML,
 * bytes) is refused with 422 and the body is never read: the platform would otherwise decode a form
 * as if it were JSON (so a plain HTML form on any site could create objects), and write multipart
 * parts to temporary files. A body without a Content-Type is refused too, as the reference refuses
 * it: browsers send one (`fetch` with a Blob) cross-site without a CORS preflight. A request without
 * a body needs no Content-Type.
 */
import { HttpMethod, type HttpServerRequest } from "@effect/platform"
import type { SchemaAST as AST } from "effect"
import type { ValidationDetailItem } from "../domain/problems.ts"

/** On a payload schema: its endpoint also takes the body as the text of a `text/plain` request. */
export const TakesTextAnnotationId: unique symbol = Symbol.for("baton/http/TakesText")

/** The media type of a Content-Type header, lower case, without its parameters; undefined when there is none. */
export const mediaTypeOf = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const semicolon = header.indexOf(";")
  const type = (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase()
  return type === "" ? undefined : type
}

/** `application/json` or a structured `application/…+json` type. */
export const isJsonMediaType = (type: string) =>
  type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"))

/** Whether a request with these headers announces a body (a length above 0, or chunks). */
export const announcesBody = (headers: HttpServerRequest.HttpServerRequest["headers"]) => {
  if (headers["transfer-encoding"] !== undefined) return true
  const length = headers["content-length"]
  return length !== undefined && length !== "0"
}

const describeExpected = (takesText: boolean) =>
  takesText ? "a JSON body (application/json) or plain text (text/plain)" : "a JSON body (application/json)"

/** The reference's type for a body that is not of the payload's kind: an object or a list. */
const typeFor = (payload: AST.AST): string => {
  let ast = payload
  while (ast._tag === "Transformation" || ast._tag === "Refinement") ast = ast.from
  return ast._tag === "TupleType" ? "list_type" : ast._tag === "StringKeyword" || ast._tag === "Union" ? "string_type" : "model_attributes_type"
}

/**
 * The problem with the Content-Type of a request with `method` to an endpoint whose payload is
 * `payload`, if it is not one the endpoint decodes. The body is not read, and not quoted.
 */
export const contentTypeProblem = (
  method: string,
  headers: HttpServerRequest.HttpServerRequest["headers"],
  payload: AST.AST
): ValidationDetailItem | undefined => {
  if (!HttpMethod.hasBody(method as HttpMethod.HttpMethod)) return undefined
  const type = mediaTypeOf(headers["content-type"])
  const takesText = payload.annotations[TakesTextAnnotationId] === true
  if (type === undefined) {
    if (!announcesBody(headers)) return undefined
    return {
      loc: ["body"],
      type: typeFor(payload),
      msg: `A body without a Content-Type is not read: this endpoint takes ${describeExpected(takesText)}`
    }
  }
  if (isJsonMediaType(type)) return undefined
  if (takesText && type === "text/plain") return undefined
  return {
    loc: ["body"],
    type: typeFor(payload),
    msg: `Unsupported content type '${type.slice(0, 100)}': this endpoint takes ${describeExpected(takesText)}`
  }
}
