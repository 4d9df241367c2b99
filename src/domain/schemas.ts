/** Field schemas several areas share. */
import { Schema } from "effect"

/** Names of flows, work queues, blocks …: no / % & > < (they appear in URL paths). */
export const ObjectName = Schema.String.pipe(
  Schema.pattern(/^[^/%&><]+$/, { jsonSchema: { pattern: "^[^/%&><]+$" } })
)

/** Key/value labels: string keys, scalar values. */
export const Labels = Schema.Record({
  key: Schema.String,
  value: Schema.Union(Schema.Boolean, Schema.Number, Schema.String)
}).annotations({ identifier: "KeyValueLabels" })

export const Tags = Schema.Array(Schema.String)

/** A body schema that rejects unknown fields (422 extra_forbidden), as the reference's create/update bodies do. */
export const strictBody = <Fields extends Schema.Struct.Fields>(fields: Fields, identifier: string) =>
  Schema.Struct(fields).annotations({ identifier, parseOptions: { onExcessProperty: "error" } })

/** A JSON object of any values (parameters, context, job variables). */
export const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** An optional field that may be null and defaults to null. */
export const nullable = <S extends Schema.Schema.Any>(schema: S) =>
  Schema.optionalWith(Schema.NullOr(schema), { default: () => null })

/** Any JSON value (null included, a missing value not). */
export const JsonValue = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.Number,
  Schema.String,
  Schema.Array(Schema.Unknown),
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
).annotations({ identifier: "JsonValue" })

/** A plain JSON object (not an array, not null). */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
