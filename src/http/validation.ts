/**
 * Turns a Schema ParseIssue into the reference's 422 detail items: one item per failing field, each
 * with `loc` (starting at "body", "query" or "path"), pydantic's `type` and `msg`, the offending
 * `input` and, for bounds, lengths, patterns and validators' errors, `ctx`. Bounds and lengths are
 * read from Schema's own refinements (greaterThanOrEqualTo, between, maxLength, minItems …), so any
 * schema that uses them is reported as pydantic reports a Field(ge=…, max_length=…).
 */
import { Option, ParseResult, Schema, SchemaAST as AST } from "effect"
import { BoundTextAnnotationId, ErrorTypeAnnotationId, InputAsSentAnnotationId, type ValidationDetailItem, valueErrorItem } from "../domain/problems.ts"

export type Location = "body" | "query" | "path" | "header"
type Loc = ReadonlyArray<string | number>
type Item = ValidationDetailItem

const item = (loc: Loc, type: string, msg: string, input: unknown, ctx?: Record<string, unknown>): Item =>
  ctx === undefined ? { loc, type, msg, input } : { loc, type, msg, input, ctx }

export const detailItems = (location: Location, issue: ParseResult.ParseIssue): ReadonlyArray<Item> => {
  try {
    return collect([location], issue, undefined)
  } catch (error) {
    // The problems of a value nested hundreds of levels deep (compound triggers inside each other)
    // are too deep to walk: one problem for the whole value.
    if (error instanceof RangeError) {
      return [{ loc: [location], type: "recursion_loop", msg: "Recursion error - the value is nested too deeply to validate" }]
    }
    throw error
  }
}

/** JSON that does not parse: the reference reports it at the body's position 0. */
export const invalidJsonItem = (message: string): Item =>
  item(["body", 0], "json_invalid", "JSON decode error", {}, { error: message })

const collect = (loc: Loc, issue: ParseResult.ParseIssue, parent: unknown): ReadonlyArray<Item> => {
  switch (issue._tag) {
    case "Pointer": {
      const keys: ReadonlyArray<PropertyKey> = Array.isArray(issue.path) ? issue.path : [issue.path as PropertyKey]
      return collect([...loc, ...keys.map(keyOf)], issue.issue, issue.actual)
    }
    case "Composite": {
      const issues = Array.isArray(issue.issues) ? issue.issues : [issue.issues as ParseResult.ParseIssue]
      if (issue.ast._tag === "Union") {
        const tag = tagProblem(loc, issues, issue.actual)
        if (tag !== undefined) return [tag]
        // A value none of a set of literals matched: one "enum" item naming them all.
        const choice = describeType(issue.ast)
        if (choice?.type === "enum" && issues.every((i) => i._tag === "Type" || isNullish(i))) {
          return [item(loc, choice.type, choice.msg, issue.actual, choice.ctx)]
        }
        return bestUnionMember(loc, issues, issue.actual, parent)
      }
      return issues.flatMap((inner) => collect(loc, inner, issue.actual))
    }
    case "Refinement": {
      if (issue.kind === "Predicate") return [refinementItem(loc, issue)]
      // Not even the refined type's base (e.g. "many" for an integer): name the refined type.
      const kind = issue.issue._tag === "Type" ? describeType(issue.ast) : undefined
      return kind === undefined ? collect(loc, issue.issue, parent) : [item(loc, kind.type, kind.msg, issue.actual, kind.ctx)]
    }
    case "Transformation":
      return transformationItems(loc, issue, parent)
    case "Missing":
      return [item(loc, "missing", "Field required", parent ?? null)]
    case "Unexpected":
      return [item(loc, "extra_forbidden", "Extra inputs are not permitted", issue.actual)]
    case "Forbidden":
      return [valueError(loc, issue.message, issue.actual)]
    case "Type":
      return [typeItem(loc, issue.ast, issue.actual, issue.message)]
  }
}

const keyOf = (key: PropertyKey): string | number => (typeof key === "symbol" ? String(key) : key)

const isNullish = (issue: ParseResult.ParseIssue): boolean =>
  issue._tag === "Type" &&
  (issue.ast._tag === "UndefinedKeyword" || (issue.ast._tag === "Literal" && issue.ast.literal === null))

/**
 * A union reports one failure per member. Optional and nullable fields would then say "expected
 * null" beside the real problem: drop those, and of the members left keep the one that got furthest
 * (fewest problems), as a client reads that as the intended shape.
 */
const bestUnionMember = (
  loc: Loc,
  issues: ReadonlyArray<ParseResult.ParseIssue>,
  actual: unknown,
  parent: unknown
): ReadonlyArray<Item> => {
  const meaningful = issues.filter((issue) => !isNullish(issue))
  let candidates = (meaningful.length > 0 ? meaningful : issues).map((issue) => collect(loc, issue, parent))
  // Members told apart by a `type` tag: those whose tag the value does not carry are not what was
  // meant; when none carries it, say which tags there are (as a discriminated union does).
  const tagFailure = (items: ReadonlyArray<Item>): ReadonlyArray<string> | undefined => {
    for (const i of items) {
      if (i.loc.length === loc.length + 1 && i.loc[loc.length] === "type" && (i.type === "literal_error" || i.type === "enum" || i.type === "missing")) {
        return typeof i.ctx?.expected === "string" ? i.ctx.expected.split(" or ").map((t) => (t.startsWith("'") ? t.slice(1, -1) : JSON.parse(t) as string)) : []
      }
      // A nested union of tagged members that had no member for this tag.
      if (i.loc.length === loc.length && (i.type === "union_tag_invalid" || i.type === "union_tag_not_found")) {
        return typeof i.ctx?.expected_tags === "string" ? i.ctx.expected_tags.split(", ").map((t) => t.slice(1, -1)) : []
      }
    }
    return undefined
  }
  if (candidates.length > 1 && candidates.some((items) => tagFailure(items) !== undefined)) {
    const tagged = candidates.filter((items) => tagFailure(items) === undefined)
    if (tagged.length > 0) candidates = tagged
    else return [tagItem(loc, candidates.flatMap((items) => tagFailure(items)!), actual)]
  }
  // Members that fail only on the top-level type (e.g. "not an object") say less than one that
  // got inside the value.
  const deep = candidates.filter((items) => items.some((i) => i.loc.length > loc.length))
  const pool = deep.length > 0 ? deep : candidates
  const best = pool.reduce((a, b) => (b.length < a.length ? b : a))
  if (pool === candidates && candidates.length > 1 && best.length === 1 && best[0]!.loc.length === loc.length) {
    // Several scalar members all rejected the value: name the first one's expectation.
    return [best[0]!.input === undefined ? { ...best[0]!, input: actual } : best[0]!]
  }
  return best
}

/** No member's `type` tag matched: the tag given (or its absence) and the tags there are. */
const tagItem = (loc: Loc, tags: ReadonlyArray<string>, actual: unknown): Item => {
  const tag = isRecord(actual) ? actual.type : undefined
  if (tag === undefined) {
    return item(loc, "union_tag_not_found", "Unable to extract tag using discriminator 'type'", actual, { discriminator: "'type'" })
  }
  const expected = [...new Set(tags)].map((t) => `'${t}'`).join(", ")
  return item(
    loc,
    "union_tag_invalid",
    `Input tag '${String(tag)}' found using 'type' does not match any of the expected tags: ${expected}`,
    actual,
    { discriminator: "'type'", tag: String(tag), expected_tags: expected }
  )
}

/**
 * A union of objects told apart by their `type` literal reports a value with an unknown (or no) tag
 * as one problem at `type`: answered as a discriminated union's tag problem on the object.
 */
const tagProblem = (loc: Loc, issues: ReadonlyArray<ParseResult.ParseIssue>, actual: unknown): Item | undefined => {
  if (issues.length !== 1 || !isRecord(actual)) return undefined
  let only = issues[0]!
  if (only._tag === "Composite" && only.ast._tag === "TypeLiteral") {
    const inner = Array.isArray(only.issues) ? only.issues : [only.issues as ParseResult.ParseIssue]
    if (inner.length !== 1) return undefined
    only = inner[0]!
  }
  if (only._tag !== "Pointer" || only.path !== "type") return undefined
  const inner = only.issue
  if (inner._tag === "Missing") return tagItem(loc, [], actual)
  if (inner._tag !== "Type") return undefined
  const members = inner.ast._tag === "Union" ? inner.ast.types : [inner.ast]
  const tags = members.flatMap((m) => (m._tag === "Literal" && typeof m.literal === "string" ? [m.literal] : []))
  return tags.length === members.length ? tagItem(loc, tags, actual) : undefined
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/** A validator's refusal: "Value error, <message>" (or just "Value error" without one). */
const valueError = (loc: Loc, message: string | undefined, input: unknown): Item =>
  message ? valueErrorItem(loc, message, input) : item(loc, "value_error", "Value error", input, { error: {} })

const plural = (n: unknown) => (n === 1 ? "" : "s")

const lengthOf = (value: unknown) => (typeof value === "string" || Array.isArray(value) ? value.length : undefined)

const refinementItem = (loc: Loc, issue: ParseResult.Refinement): Item => {
  const ast = issue.ast
  const json = (AST.getJSONSchemaAnnotation(ast).pipe(Option.getOrUndefined) ?? {}) as Record<string, unknown>
  const id = AST.getSchemaIdAnnotation(ast).pipe(Option.getOrUndefined)
  const actual = issue.actual
  const inner = issue.issue
  const custom = inner._tag === "Type" && inner.message !== undefined ? inner.message : undefined
  // A bound as the reference writes it, in msg and ctx alike.
  const bound = (value: unknown) => (ast.annotations[BoundTextAnnotationId] as string | undefined) ?? value
  const greaterEqual = () => item(loc, "greater_than_equal", `Input should be greater than or equal to ${bound(json.minimum)}`, actual, { ge: bound(json.minimum) })
  const lessEqual = () => item(loc, "less_than_equal", `Input should be less than or equal to ${bound(json.maximum)}`, actual, { le: bound(json.maximum) })
  const stringTooShort = (min: unknown) =>
    item(loc, "string_too_short", `String should have at least ${min} character${plural(min)}`, actual, { min_length: min })
  const stringTooLong = (max: unknown) =>
    item(loc, "string_too_long", `String should have at most ${max} character${plural(max)}`, actual, { max_length: max })
  const listTooShort = (min: unknown) =>
    item(loc, "too_short", `List should have at least ${min} item${plural(min)} after validation, not ${lengthOf(actual)}`, actual, {
      field_type: "List",
      min_length: min,
      actual_length: lengthOf(actual)
    })
  const listTooLong = (max: unknown) =>
    item(loc, "too_long", `List should have at most ${max} item${plural(max)} after validation, not ${lengthOf(actual)}`, actual, {
      field_type: "List",
      max_length: max,
      actual_length: lengthOf(actual)
    })
  switch (id) {
    case Schema.GreaterThanSchemaId:
      return item(loc, "greater_than", `Input should be greater than ${bound(json.exclusiveMinimum)}`, actual, { gt: bound(json.exclusiveMinimum) })
    case Schema.GreaterThanOrEqualToSchemaId:
      return greaterEqual()
    case Schema.LessThanSchemaId:
      return item(loc, "less_than", `Input should be less than ${bound(json.exclusiveMaximum)}`, actual, { lt: bound(json.exclusiveMaximum) })
    case Schema.LessThanOrEqualToSchemaId:
      return lessEqual()
    case Schema.BetweenSchemaId:
      // Two bounds in one check: the one the value is beyond, as pydantic checks each on its own.
      return typeof actual === "number" && actual < (json.minimum as number) ? greaterEqual() : lessEqual()
    case Schema.IntSchemaId:
      return item(loc, "int_from_float", "Input should be a valid integer, got a number with a fractional part", actual)
    case Schema.PatternSchemaId:
      return item(loc, "string_pattern_mismatch", `String should match pattern '${json.pattern}'`, actual, { pattern: json.pattern })
    case Schema.MinLengthSchemaId:
      return stringTooShort(json.minLength)
    case Schema.MaxLengthSchemaId:
      return stringTooLong(json.maxLength)
    case Schema.LengthSchemaId:
      return (lengthOf(actual) ?? 0) < (json.minLength as number) ? stringTooShort(json.minLength) : stringTooLong(json.maxLength)
    case Schema.MinItemsSchemaId:
      return listTooShort(json.minItems)
    case Schema.MaxItemsSchemaId:
      return listTooLong(json.maxItems)
    case Schema.ItemsCountSchemaId:
      return (lengthOf(actual) ?? 0) < (json.minItems as number) ? listTooShort(json.minItems) : listTooLong(json.maxItems)
    case Schema.UUIDSchemaId:
      return item(loc, "uuid_parsing", "Input should be a valid UUID", actual)
    case Schema.ValidDateSchemaId:
      return item(loc, "datetime_parsing", "Input should be a valid datetime", actual)
    case Schema.FiniteSchemaId:
      return item(loc, "finite_number", "Input should be a finite number", actual)
  }
  return valueError(loc, custom ?? AST.getDescriptionAnnotation(ast).pipe(Option.getOrUndefined), actual)
}

const transformationItems = (loc: Loc, issue: ParseResult.Transformation, parent: unknown): ReadonlyArray<Item> => {
  // A failure of the encoded side (e.g. "not a string") or of the decoded value's checks is
  // reported as that; a failed conversion is reported by what the transformation produces.
  if (issue.kind !== "Transformation") {
    const items = collect(loc, issue.issue, parent)
    return issue.kind === "Type" && issue.ast.annotations[InputAsSentAnnotationId] === true
      ? items.map((i) => (i.loc.length === loc.length ? { ...i, input: issue.actual } : i))
      : items
  }
  const inner = issue.issue
  if (inner._tag === "Type" && errorTypeOf(inner.ast) !== undefined) return [typeItem(loc, inner.ast, inner.actual, inner.message)]
  const kind = describeType(issue.ast.to) ?? describeType(issue.ast)
  if (kind !== undefined) return [item(loc, kind.type, kind.msg, issue.actual)]
  const message = inner._tag === "Type" || inner._tag === "Forbidden" ? inner.message : undefined
  return [valueError(loc, message, issue.actual)]
}

const errorTypeOf = (ast: AST.AST) => ast.annotations[ErrorTypeAnnotationId] as string | undefined

const typeItem = (loc: Loc, ast: AST.AST, actual: unknown, message: string | undefined): Item => {
  const named = errorTypeOf(ast)
  if (named !== undefined) return item(loc, named, message ?? named, actual)
  const kind = describeType(ast)
  if (kind !== undefined) return item(loc, kind.type, kind.msg, actual, kind.ctx)
  return valueError(loc, message, actual)
}

interface Kind {
  readonly type: string
  readonly msg: string
  readonly ctx?: Record<string, unknown>
}

/** The pydantic error type and message for a value that is not of the schema's type. */
const describeType = (ast: AST.AST): Kind | undefined => {
  const id = AST.getIdentifierAnnotation(ast).pipe(Option.getOrUndefined)
  if (id !== undefined) {
    if (/uuid/i.test(id)) return { type: "uuid_parsing", msg: "Input should be a valid UUID" }
    if (/date-?time|DateTime/i.test(id)) return { type: "datetime_parsing", msg: "Input should be a valid datetime" }
    if (/duration/i.test(id)) return { type: "time_delta_parsing", msg: "Input should be a valid timedelta" }
  }
  switch (ast._tag) {
    case "StringKeyword":
      return { type: "string_type", msg: "Input should be a valid string" }
    case "NumberKeyword":
      return { type: "float_type", msg: "Input should be a valid number" }
    case "BooleanKeyword":
      return { type: "bool_type", msg: "Input should be a valid boolean" }
    case "TupleType":
      return { type: "list_type", msg: "Input should be a valid list" }
    case "TypeLiteral":
      return { type: "dict_type", msg: "Input should be a valid dictionary or object" }
    case "Literal":
      return {
        type: "literal_error",
        msg: `Input should be ${JSON.stringify(ast.literal)}`,
        ctx: { expected: JSON.stringify(ast.literal) }
      }
    case "Enums":
      return {
        type: "enum",
        msg: `Input should be ${ast.enums.map(([, v]) => `'${v}'`).join(" or ")}`,
        ctx: { expected: ast.enums.map(([, v]) => `'${v}'`).join(" or ") }
      }
    case "Refinement": {
      const schemaId = AST.getSchemaIdAnnotation(ast).pipe(Option.getOrUndefined)
      if (schemaId === Schema.IntSchemaId) return { type: "int_type", msg: "Input should be a valid integer" }
      if (schemaId === Schema.UUIDSchemaId) return { type: "uuid_parsing", msg: "Input should be a valid UUID" }
      return describeType(ast.from)
    }
    case "Transformation":
      return describeType(ast.to)
    case "Declaration":
    case "Suspend":
      return undefined
    case "Union": {
      const literals = ast.types.filter((t): t is AST.Literal => t._tag === "Literal" && t.literal !== null)
      if (literals.length === ast.types.length || literals.length === ast.types.length - 1) {
        const expected = literals.map((l) => `'${String(l.literal)}'`).join(" or ")
        return { type: "enum", msg: `Input should be ${expected}`, ctx: { expected } }
      }
      return undefined
    }
  }
  return undefined
}
