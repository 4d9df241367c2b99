import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { TakesTextAnnotationId } from "../http/content-type.ts"

export const TemplateError = Schema.Struct({ line: Schema.Int, message: Schema.String, source: Schema.String })

/** A template that does not parse, or breaks the loop limits: 422 `{"error": {line, message, source}}`. */
export class TemplateInvalid extends Schema.TaggedError<TemplateInvalid>()("TemplateInvalid", { error: TemplateError }) {}

export const TemplateInvalidResponse = Schema.transform(Schema.Struct({ error: TemplateError }), Schema.typeSchema(TemplateInvalid), {
  strict: false,
  decode: (body) => new TemplateInvalid({ error: body.error }),
  encode: (invalid) => ({ error: invalid.error })
}).annotations(HttpApiSchema.annotations({ status: 422, identifier: "TemplateInvalid" }))

/** The template as a JSON string or as the text of a text/plain body; no body at all is the empty template. */
export const TemplateBody = Schema.Union(
  Schema.String,
  Schema.transform(Schema.Record({ key: Schema.String, value: Schema.Never }), Schema.Literal(""), {
    strict: true,
    decode: () => "" as const,
    encode: () => ({})
  })
).annotations({ identifier: "Template", [TakesTextAnnotationId]: true })

export class TemplatesApi extends HttpApiGroup.make("templates")
  .add(
    HttpApiEndpoint.post("validate", "/templates/validate")
      .setPayload(TemplateBody)
      .addSuccess(Schema.Void)
      .addError(TemplateInvalidResponse)
  )
{}
