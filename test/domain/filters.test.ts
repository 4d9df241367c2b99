/**
 * Filters declared once: each criterion's schema accepts exactly the keys the reference accepts for
 * it, under the reference's schema name, with the defaults it has.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, Option, Schema, SchemaAST } from "effect"
import { BlockDocumentFilter } from "../../src/blocks/documents-schemas.ts"
import { BlockTypeFilter } from "../../src/blocks/schemas.ts"
import { FlowFilter } from "../../src/flows/filter.ts"
import { WorkQueueFilter } from "../../src/work-pools/filter.ts"

const decode = <A, I>(schema: Schema.Schema<A, I>, value: unknown) => Schema.decodeUnknownEither(schema)(value)

describe("filters declared as criteria", () => {
  it("accepts only the keys a criterion declares", () => {
    expect(Either.isLeft(decode(FlowFilter, { name: { startswith_: ["etl"] } }))).toBe(true)
    expect(decode(WorkQueueFilter, { name: { startswith_: ["etl"] } })).toEqual(
      Either.right({ operator: "and_", name: { startswith_: ["etl"] } })
    )
    expect(Either.isLeft(decode(FlowFilter, { unknown: {} }))).toBe(true)
  })

  it("gives a filter its operator (and_ unless sent), except a filter whose criteria all apply", () => {
    expect(decode(FlowFilter, { operator: "or_" })).toEqual(Either.right({ operator: "or_" }))
    expect(decode(FlowFilter, {})).toEqual(Either.right({ operator: "and_" }))
    expect(Either.isLeft(decode(BlockTypeFilter, { operator: "and_" }))).toBe(true)
    expect(decode(BlockTypeFilter, { slug: { any_: ["s3"] } })).toEqual(Either.right({ slug: { any_: ["s3"] } }))
  })

  it("applies a criterion's default when it is not sent, and none when it is null", () => {
    expect(decode(BlockDocumentFilter, {})).toEqual(Either.right({ operator: "and_", is_anonymous: { eq_: false } }))
    expect(decode(BlockDocumentFilter, { is_anonymous: null })).toEqual(Either.right({ operator: "and_", is_anonymous: null }))
  })

  it("names each criterion's schema as the reference does", () => {
    const identifier = (schema: Schema.Schema.Any) => SchemaAST.getIdentifierAnnotation(schema.ast).pipe(Option.getOrUndefined)
    expect(identifier(FlowFilter)).toBe("FlowFilter")
    expect(identifier(FlowFilter.criteria.name.schema)).toBe("FlowFilterName")
    expect(identifier(FlowFilter.criteria.tags.schema)).toBe("FlowFilterTags")
    // The filter's field is the criterion's own property: one declaration for both.
    expect(FlowFilter.fields.name).toBe(FlowFilter.criteria.name.property)
  })
})
