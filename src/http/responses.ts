/** Answers the declared success schemas cannot express on their own. */
import { HttpServerResponse } from "@effect/platform"
import { Effect, Schema } from "effect"

/** `value` as JSON: 201 when it was just created, 200 when it already existed. */
export const createdOrFound = <A, I>(schema: Schema.Schema<A, I>, value: A, created: boolean) =>
  Effect.map(Effect.orDie(Schema.encode(schema)(value)), (json) =>
    HttpServerResponse.unsafeJson(json, { status: created ? 201 : 200 })
  )

/** JSON text written by hand (the hot paths' wire writers, a page the database wrote) as the answer. */
export const jsonText = (text: string, status = 200) => HttpServerResponse.text(text, { status, contentType: "application/json" })

/** JSON already encoded to UTF-8 (domain/json-list.ts) as the answer. */
export const jsonBytes = (body: Uint8Array, status = 200) =>
  HttpServerResponse.uint8Array(body, { status, contentType: "application/json" })

/** `jsonText`: 201 when it was just created, 200 when it already existed. */
export const jsonTextCreatedOrFound = (text: string, created: boolean) => jsonText(text, created ? 201 : 200)

/** The reference's answer for a path nothing serves. */
export const notFound = HttpServerResponse.unsafeJson({ detail: "Not Found" }, { status: 404 })
