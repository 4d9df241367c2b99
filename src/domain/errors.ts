/**
 * The errors areas and the domain fail with, each carrying the reference's `detail`, and the one
 * helper (`httpError`) that gives an error class its status and its wire body `{"detail": …}` as
 * HttpApiSchema annotations. The shared shapes below are declared once on the Api
 * (src/http/errors.ts); an area's own errors (`FlowNotFound` …) on the endpoints that raise them.
 */
import { HttpApiSchema } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { ValidationDetailItem } from "./problems.ts"

/**
 * `detail` is either the reference's list of field problems or, for rules a handler checks itself
 * (e.g. "Invalid limit: must be less than or equal to 200."), a plain message.
 */
export const ValidationDetail = Schema.Union(Schema.Array(ValidationDetailItem), Schema.String)

export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  detail: ValidationDetail
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { detail: Schema.String }) {}

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", { detail: Schema.String }) {}

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", { detail: Schema.String }) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", { detail: Schema.String }) {}

export class Gone extends Schema.TaggedError<Gone>()("Gone", { detail: Schema.String }) {}

/** A concurrency limit is full (answered with Retry-After by the handlers that take slots). */
export class Locked extends Schema.TaggedError<Locked>()("Locked", { detail: Schema.String }) {}

/** The reference's answer when a write names an object that does not exist or breaks a unique key. */
export const integrityConflict = () => new Conflict({ detail: INTEGRITY_CONFLICT })

/** The reference's words for a write that broke a unique or foreign key constraint. */
export const INTEGRITY_CONFLICT =
  "Data integrity conflict. This usually means a unique or foreign key constraint was violated. See server logs for details."

/** The status each error class's wire form answers with, by class tag (filled by `httpError`). */
const statusByTag = new Map<string, number>()

/**
 * The status the Api answers `error` with, when its class has a wire form: for callers that report
 * an operation's outcome as the Api would (an automation's action calling a service).
 */
export const statusOf = (error: unknown): number | undefined => {
  const tag = (error as { readonly _tag?: unknown } | null)?._tag
  return typeof tag === "string" ? statusByTag.get(tag) : undefined
}

/**
 * The wire form of an error class: the body `{"detail": …}` (the class tag never leaves the server),
 * answered with `status`, decoding back to the class. `identifier` names it in the OpenAPI document.
 */
export const httpError = <Self extends { readonly detail: D }, D = string, DI = string>(
  errorClass: Schema.Schema<Self, any> & (new(props: { readonly detail: D }) => Self),
  status: number,
  options: { readonly identifier: string; readonly detail?: Schema.Schema<D, DI> }
) => {
  const tag = (errorClass as { readonly _tag?: unknown })._tag
  if (typeof tag === "string") statusByTag.set(tag, status)
  return Schema.transform(
    Schema.Struct({ detail: options.detail ?? (Schema.String as unknown as Schema.Schema<D, DI>) }),
    Schema.typeSchema(errorClass),
    {
      strict: false,
      decode: (body) => new errorClass({ detail: body.detail }),
      encode: (error) => ({ detail: error.detail })
    }
  ).annotations(HttpApiSchema.annotations({ status, identifier: options.identifier }))
}

/** A `detail` field with the reference's fixed message as its default: `new FlowNotFound()`. */
export const fixedDetail = (message: string) =>
  Schema.String.pipe(Schema.propertySignature, Schema.withConstructorDefault(() => message))

/** What a lookup found, or the area's error when it found nothing: `lookup.pipe(orFail(() => new FlowNotFound()))`. */
export const orFail = <E2>(error: () => E2) =>
<A, E, R>(lookup: Effect.Effect<Option.Option<A>, E, R>): Effect.Effect<A, E | E2, R> =>
  Effect.flatMap(lookup, Option.match({ onNone: () => Effect.fail(error()), onSome: Effect.succeed }))
