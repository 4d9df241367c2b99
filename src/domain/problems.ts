/**
 * The problems a request can have, in the reference's (pydantic's) vocabulary: the shape of one
 * item of a 422 answer, a rule's `value_error`, and the annotations schemas carry so that their
 * failures are reported as pydantic reports them (src/http/validation.ts collects the items).
 */
import { ParseResult, Schema, type SchemaAST as AST } from "effect"

/** One entry of a 422 answer, in the reference's shape. */
export const ValidationDetailItem = Schema.Struct({
  loc: Schema.Array(Schema.Union(Schema.String, Schema.Number)),
  msg: Schema.String,
  type: Schema.String,
  input: Schema.optional(Schema.Unknown),
  ctx: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}).annotations({ identifier: "ValidationErrorItem" })
export type ValidationDetailItem = typeof ValidationDetailItem.Type

type Loc = ReadonlyArray<string | number>

/**
 * A rule's refusal as the reference's validators word it: a `value_error` whose message follows
 * "Value error, " and whose ctx names the error raised (an empty object on the wire). `input` is
 * the value refused; a handler that does not hold the body as sent leaves it out and the Api
 * middleware fills it in from the request.
 */
export const valueErrorItem = (loc: Loc, message: string, input?: unknown): ValidationDetailItem => ({
  loc,
  msg: `Value error, ${message}`,
  type: "value_error",
  ...(input === undefined ? {} : { input }),
  ctx: { error: {} }
})

/** On the AST of a ParseIssue made by `wireIssue`: the pydantic error type it is reported as. */
export const ErrorTypeAnnotationId: unique symbol = Symbol.for("baton/http/ErrorType")

const markers = new Map<string, AST.AST>()

/**
 * A failure of `actual` reported as the pydantic error `type` with `msg`, for failures no schema
 * kind names (text that does not read as a number: `int_parsing`).
 */
export const wireIssue = (type: string, msg: string, actual: unknown): ParseResult.ParseIssue => {
  let ast = markers.get(type)
  if (ast === undefined) {
    ast = Schema.Unknown.annotations({ [ErrorTypeAnnotationId]: type }).ast
    markers.set(type, ast)
  }
  return new ParseResult.Type(ast, actual, msg)
}

/**
 * On a transformation that only reads a value in another form (a numeric string as a number):
 * problems of the value it read are reported with the input as it was sent, as pydantic does.
 */
export const InputAsSentAnnotationId: unique symbol = Symbol.for("baton/http/InputAsSent")

/**
 * On a bound refinement: how the reference writes its bound, where that is not the number (a
 * duration's bound reads "0 seconds").
 */
export const BoundTextAnnotationId: unique symbol = Symbol.for("baton/http/BoundText")

