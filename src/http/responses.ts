/** Answers the declared success schemas cannot express on their own. */
import { HttpServerResponse } from "@effect/platform"
import { Effect, Schema } from "effect"

/** `value` as JSON: 201 when it was just created, 200 when it already existed. */
export const createdOrFound = <A, I>(schema: Schema.Schema<A, I>, value: A, created: boolean) =>
  Effect.map(Effect.orDie(Schema.encode(schema)(value)), (json) =>
    HttpServerResponse.unsafeJson(json, { status: created ? 201 : 200 })
  )

/**
 * JSON text written by hand (the hot paths' wire writers) as the answer: 201 when it was just
 * created, 200 when it already existed.
 */
export const jsonTextCreatedOrFound = (text: string, created: boolean) =>
  HttpServerResponse.text(text, { status: created ? 201 : 200, contentType: "application/json" })

/** The reference's answer for a path nothing serves. */
export const notFound = HttpServerResponse.unsafeJson({ detail: "Not Found" }, { status: 404 })
