/**
 * A fast path for every Effect Schema decode in the process: request bodies, path and query
 * parameters, rows read through SqlSchema.
 *
 * Effect Schema decodes through parsers that build an Either or an Effect at every node, try a
 * union's members one after another making a ParseIssue for each that does not match, and check a
 * transformation's output again against its type side: a `set_state` body of
 * `{"state": {"type": "PENDING"}}` cost about 65 µs, the 18 defaults of its state's details
 * checked one by one, and the decodes of one run lifecycle about a twentieth of the server's CPU
 * (docs/performance.md, "Tenth round").
 *
 * Here each schema's AST is also compiled into a plain function that returns the decoded value, or
 * says the input is refused, or that it cannot tell. Its answer is the schema's only when it is
 * sure to be: it runs a node's own refinement, declaration or transformation (the schema's own
 * functions) and takes their answer when it comes at once; where a node is of a kind it does not
 * know, a union has more than one member that matches (the schema would pick by its own order), or
 * a refinement, declaration or transformation answers with an Effect, it cannot tell. A value it
 * returns is the one the schema returns (the same fields in the same order, defaults and
 * transformations applied by the schema's functions); anything else (a refused input, to be
 * answered with the schema's own error, or one it cannot tell) is decoded by the schema itself.
 *
 * Installed on Effect's memo of decoding parsers (one per AST, shared by every decode in the
 * process): each parser memoized after `installDecodeFastPath` tries the compiled function first.
 * test/domain/decode-fast-path.test.ts compares both on every schema of the Api.
 */
import { Effect, Either, Layer, Option, ParseResult, SchemaAST as AST } from "effect"
import { globalValue } from "effect/GlobalValue"

/** The input is refused: the schema's decode fails too (and says why). */
const REFUSED: unique symbol = Symbol("refused")
/** This path cannot tell: the schema decodes. */
const UNSURE: unique symbol = Symbol("unsure")
type Outcome = unknown
type Decoder = (input: unknown) => Outcome

/** What a node's parse options say about decoding (the options that change a successful decode). */
interface Options {
  readonly onExcessProperty: "ignore" | "error"
  readonly exact: boolean
}

/** The four Options there are, one object each (the caches below are keyed by them). */
const OPTIONS = {
  ignore: { exact: { onExcessProperty: "ignore", exact: true }, loose: { onExcessProperty: "ignore", exact: false } },
  error: { exact: { onExcessProperty: "error", exact: true }, loose: { onExcessProperty: "error", exact: false } }
} as const satisfies Record<Options["onExcessProperty"], Record<"exact" | "loose", Options>>
const optionsOf = (onExcessProperty: Options["onExcessProperty"], exact: boolean): Options =>
  OPTIONS[onExcessProperty][exact ? "exact" : "loose"]
const DEFAULTS = optionsOf("ignore", false)

const always = (outcome: typeof UNSURE | typeof REFUSED): Decoder => () => outcome
const asItIs: Decoder = (input) => input
const unsure = always(UNSURE)

/** The options object a node's own functions get, as the schema passes it. */
const parseOptionsOf = (options: Options): AST.ParseOptions =>
  options.onExcessProperty === "ignore" && !options.exact ? AST.defaultParseOption : {
    ...(options.onExcessProperty === "error" ? { onExcessProperty: "error" } : {}),
    ...(options.exact ? { exact: true } : {})
  }

/** An Effect's result when it is already there: an Either the schema's functions answered with. */
const settled = (result: unknown): Outcome => {
  if (!Either.isEither(result)) return UNSURE
  return Either.isRight(result) ? result.right : REFUSED
}

const isRecord = (input: unknown): input is Record<PropertyKey, unknown> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

const compiledByOptions = new Map<Options, WeakMap<AST.AST, Decoder>>()

/** The decoder of `ast` under `options`, compiled once. */
const compile = (ast: AST.AST, options: Options): Decoder => {
  let compiled = compiledByOptions.get(options)
  if (compiled === undefined) compiledByOptions.set(options, compiled = new WeakMap())
  const known = compiled.get(ast)
  if (known !== undefined) return known
  // A node met again while it compiles (through a suspension) finds this and calls the real one.
  let decoder: Decoder = unsure
  const late: Decoder = (input) => decoder(input)
  compiled.set(ast, late)
  decoder = compileNode(ast, options)
  compiled.set(ast, decoder)
  return decoder
}

const compileNode = (ast: AST.AST, outer: Options): Decoder => {
  // A node's own parse options apply below it, as the schema merges them over the caller's.
  const annotated = AST.getParseOptionsAnnotation(ast)
  let options = outer
  if (Option.isSome(annotated)) {
    const given = annotated.value
    if (given.propertyOrder === "original" || given.onExcessProperty === "preserve") return unsure
    options = optionsOf(given.onExcessProperty ?? outer.onExcessProperty, given.exact ?? outer.exact)
  }
  const decoder = compileKind(ast, options)
  // A fallback decode may accept what the node refuses.
  if (Option.isSome(AST.getDecodingFallbackAnnotation(ast))) return (input) => {
    const outcome = decoder(input)
    return outcome === REFUSED ? UNSURE : outcome
  }
  return decoder
}

const compileKind = (ast: AST.AST, options: Options): Decoder => {
  switch (ast._tag) {
    case "StringKeyword":
    case "NumberKeyword":
    case "BooleanKeyword":
    case "BigIntKeyword":
    case "SymbolKeyword":
    case "UndefinedKeyword": {
      const type = typeofOf[ast._tag]
      return (input) => (typeof input === type ? input : REFUSED)
    }
    case "ObjectKeyword":
      return (input) => ((typeof input === "object" && input !== null) || typeof input === "function" ? input : REFUSED)
    case "UnknownKeyword":
    case "AnyKeyword":
    case "VoidKeyword":
      return (input) => input
    case "NeverKeyword":
      return always(REFUSED)
    case "Literal": {
      const literal = ast.literal
      return (input) => (input === literal ? input : REFUSED)
    }
    case "UniqueSymbol": {
      const symbol = ast.symbol
      return (input) => (input === symbol ? input : REFUSED)
    }
    case "Enums": {
      const values = ast.enums.map(([, value]) => value)
      return (input) => (values.includes(input as string | number) ? input : REFUSED)
    }
    case "Refinement": {
      const from = compile(ast.from, options)
      const parseOptions = parseOptionsOf(options)
      return (input) => {
        const value = from(input)
        if (value === REFUSED || value === UNSURE) return value
        return Option.isNone(ast.filter(value, parseOptions, ast)) ? value : REFUSED
      }
    }
    case "Declaration": {
      const parse = ast.decodeUnknown(...ast.typeParameters)
      const parseOptions = parseOptionsOf(options)
      return (input) => settled(parse(input, parseOptions, ast))
    }
    case "Transformation": {
      const from = compile(ast.from, options)
      const to = structAfterProperties(ast, options) ?? compile(ast.to, options)
      const transform = transformation(ast, parseOptionsOf(options))
      return (input) => {
        const decoded = from(input)
        if (decoded === REFUSED || decoded === UNSURE) return decoded
        const transformed = transform(decoded, input)
        if (transformed === REFUSED || transformed === UNSURE) return transformed
        return to(transformed)
      }
    }
    case "Union":
      return union(ast, options)
    case "TupleType":
      return array(ast, options)
    case "TypeLiteral":
      return struct(ast, options)
    case "Suspend": {
      let target: Decoder | undefined
      return (input) => (target ??= compile(ast.f(), options))(input)
    }
    default:
      // Template literals: left to the schema.
      return unsure
  }
}

/** A transformation's decoding, as the schema applies it (a struct's property transformations in their order). */
const transformation = (ast: AST.Transformation, parseOptions: AST.ParseOptions) => {
  const kind = ast.transformation
  switch (kind._tag) {
    case "FinalTransformation":
      return (decoded: unknown, input: unknown): Outcome => settled(kind.decode(decoded, parseOptions, ast, input))
    case "ComposeTransformation":
      return (decoded: unknown): Outcome => decoded
    case "TypeLiteralTransformation":
      return (decoded: unknown): Outcome => {
        // The struct the `from` side just made, changed in place as the schema changes it.
        const output = decoded as Record<PropertyKey, unknown>
        for (const property of kind.propertySignatureTransformations) {
          const value = property.decode(
            Object.prototype.hasOwnProperty.call(output, property.from) ? Option.some(output[property.from]) : Option.none()
          )
          delete output[property.from]
          if (Option.isSome(value)) output[property.to] = value.value
        }
        return output
      }
  }
}

/**
 * The `to` side of a struct's property transformations (defaults, renames), checking only what they
 * made. A property the `from` side decoded and the transformations left alone, whose type on the
 * `to` side is its `from` type's type side (AST.typeAST), holds already: a decode's value is of
 * its schema's type. It is taken as it is, where the schema checks it again (a `set_state` body's
 * state and its details were checked twice). Undefined when that cannot be told: `to` decodes whole.
 */
const structAfterProperties = (ast: AST.Transformation, options: Options): Decoder | undefined => {
  const kind = ast.transformation
  const { from, to } = ast
  if (kind._tag !== "TypeLiteralTransformation" || from._tag !== "TypeLiteral" || to._tag !== "TypeLiteral") return undefined
  if (Option.isSome(AST.getParseOptionsAnnotation(to)) || Option.isSome(AST.getDecodingFallbackAnnotation(to))) return undefined
  const made = new Set(kind.propertySignatureTransformations.flatMap((property) => [property.from, property.to]))
  const decoded = new Map(from.propertySignatures.map((property) => [property.name, property]))
  const asTheyAre = new Set<PropertyKey>()
  for (const property of to.propertySignatures) {
    const source = decoded.get(property.name)
    if (made.has(property.name) || source === undefined || source.isOptional !== property.isOptional) continue
    if (AST.typeAST(source.type) === property.type) asTheyAre.add(property.name)
  }
  return asTheyAre.size === 0 ? undefined : struct(to, options, asTheyAre)
}

/** The `typeof` of the values a keyword accepts as they are, for the keywords that are a `typeof` check. */
const typeofOf: Partial<Record<AST.AST["_tag"], string>> = {
  StringKeyword: "string",
  NumberKeyword: "number",
  BooleanKeyword: "boolean",
  BigIntKeyword: "bigint",
  SymbolKeyword: "symbol",
  UndefinedKeyword: "undefined"
}

/**
 * A union's answer: the one member that matches, the schema's answer whatever order it tries them
 * in. Members that accept a value as it is (literals, `typeof` keywords, unknown) are checked
 * together, and several of them matching is no doubt: each gives the input back. A member that makes
 * something else and another member matching too: the schema's order decides, so the schema does.
 */
const union = (ast: AST.Union, options: Options): Decoder => {
  const literals = new Set<unknown>()
  const typeofs = new Set<string>()
  let acceptsAll = false
  const others: Array<Decoder> = []
  for (const member of ast.types) {
    const kind = member._tag
    const simple = Option.isNone(AST.getDecodingFallbackAnnotation(member)) && Option.isNone(AST.getParseOptionsAnnotation(member))
    if (simple && kind === "Literal" && !Number.isNaN(member.literal)) literals.add(member.literal)
    else if (simple && typeofOf[kind] !== undefined) typeofs.add(typeofOf[kind]!)
    else if (simple && (kind === "UnknownKeyword" || kind === "AnyKeyword" || kind === "VoidKeyword")) acceptsAll = true
    else others.push(compile(member, options))
  }
  return (input) => {
    const asItIs = acceptsAll || literals.has(input) || typeofs.has(typeof input)
    let found: Outcome = REFUSED
    for (let i = 0; i < others.length; i++) {
      const outcome = others[i]!(input)
      if (outcome === UNSURE) return UNSURE
      if (outcome === REFUSED) continue
      if (found !== REFUSED || asItIs) return UNSURE
      found = outcome
    }
    return asItIs ? input : found
  }
}

/** Arrays (`Schema.Array`: a rest element and nothing else); other tuples are left to the schema. */
const array = (ast: AST.TupleType, options: Options): Decoder => {
  if (ast.elements.length > 0 || ast.rest.length !== 1) return unsure
  const item = compile(ast.rest[0]!.type, options)
  return (input) => {
    if (!Array.isArray(input)) return REFUSED
    const output = new Array<unknown>(input.length)
    for (let i = 0; i < input.length; i++) {
      const outcome = item(input[i])
      if (outcome === REFUSED || outcome === UNSURE) return outcome
      output[i] = outcome
    }
    return output
  }
}

/**
 * Structs: the properties in the schema's order, then the keys of string index signatures (those not
 * also properties), as the schema builds its output. The code is made for each struct, with its
 * property names written in, so that every read and write of a property has a place of its own in
 * V8 (one function for every struct read and wrote them all through one place, slowly: that was most
 * of this path's time).
 */
const struct = (ast: AST.TypeLiteral, options: Options, asTheyAre?: ReadonlySet<PropertyKey>): Decoder => {
  if (ast.indexSignatures.some((signature) => signature.parameter._tag !== "StringKeyword")) return unsure
  if (ast.propertySignatures.some((property) => typeof property.name !== "string" || property.name === "__proto__")) return unsure
  const properties = ast.propertySignatures.map((property) => ({
    name: property.name as string,
    isOptional: property.isOptional,
    decode: asTheyAre?.has(property.name) ? asItIs : compile(property.type, options)
  }))
  const indexes = ast.indexSignatures.map((signature) => compile(signature.type, options))
  const expected = new Set<PropertyKey>(properties.map((property) => property.name))
  // With an index signature every string key is expected; symbols are left to the schema.
  const excess = options.onExcessProperty !== "error" ? "" : `
    for (const key of Reflect.ownKeys(input)) {
      if (typeof key === "symbol") return UNSURE
      ${indexes.length === 0 ? "if (!expected.has(key)) return REFUSED" : ""}
    }`
  const reads = properties.map((property, i) => {
    const key = JSON.stringify(property.name)
    const present = `hasOwn.call(input, ${key})`
    const opening = property.isOptional ? `if (${present}) {` : options.exact ? `if (!${present}) return REFUSED\n    {` : "{"
    return `
    ${opening}
      outcome = decoders[${i}](input[${key}])
      if (outcome === REFUSED || outcome === UNSURE) return outcome
      output[${key}] = outcome
    }`
  })
  const indexed = indexes.length === 0 ? "" : `
    for (const index of indexes) {
      for (const key of Object.keys(input)) {
        outcome = index(input[key])
        if (outcome === REFUSED || outcome === UNSURE) return outcome
        if (!expected.has(key)) output[key] = outcome
      }
    }`
  const make = new Function("isRecord", "hasOwn", "REFUSED", "UNSURE", "decoders", "indexes", "expected", `"use strict"
  return function struct(input) {
    if (!isRecord(input)) return REFUSED${excess}
    const output = {}
    let outcome${reads.join("")}${indexed}
    return output
  }`) as (...args: Array<unknown>) => Decoder
  return make(isRecord, Object.prototype.hasOwnProperty, REFUSED, UNSURE, properties.map((property) => property.decode), indexes, expected)
}

type Parser = (input: unknown, options?: AST.ParseOptions) => unknown

/** The options a caller's parse options come to here; undefined when this path does not take them. */
const callerOptions = (options: AST.ParseOptions | undefined): Options | undefined => {
  if (options === undefined) return DEFAULTS
  if (options.propertyOrder === "original" || options.onExcessProperty === "preserve") return undefined
  return optionsOf(options.onExcessProperty ?? "ignore", options.exact === true)
}

/** The parsers that try the fast path first. */
const wrapped = new WeakSet<Parser>()

const withFastPath = (ast: AST.AST, parser: Parser): Parser => {
  const decoders = new Map<Options, Decoder>()
  const fastFirst: Parser = (input, options) => {
    const taken = callerOptions(options)
    if (taken !== undefined) {
      let decode = decoders.get(taken)
      if (decode === undefined) decoders.set(taken, decode = compile(ast, taken))
      const outcome = decode(input)
      if (outcome !== REFUSED && outcome !== UNSURE) return Either.right(outcome)
    }
    return parser(input, options)
  }
  wrapped.add(fastFirst)
  schemaParsers.set(fastFirst, parser)
  return fastFirst
}

/** The schema's own parser behind each parser that tries the fast path first. */
const schemaParsers = new WeakMap<Parser, Parser>()

const INSTALLED = Symbol.for("baton/domain/decodeFastPath")

/** Effect's memo of decoding parsers, one per AST (a global value of its ParseResult module). */
const decodeMemo = () => globalValue(Symbol.for("effect/ParseResult/decodeMemoMap"), () => new WeakMap<AST.AST, Parser>())

/**
 * Makes every decoding parser Effect memoizes from now on try the fast path first; idempotent.
 * Whether it is in place (false when this version of Effect keeps its parsers elsewhere).
 */
export const installDecodeFastPath = (): boolean => {
  const memo = decodeMemo() as WeakMap<AST.AST, Parser> & { [INSTALLED]?: true }
  if (memo[INSTALLED] !== true) {
    const { get, set } = WeakMap.prototype
    // Effect memoizes a parser and returns it as it made it, unwrapped: a parser missing from the
    // memo is made (and memoized, wrapped) here first, so that every lookup finds the wrapped one.
    const making = new Set<AST.AST>()
    memo.get = function(this: WeakMap<AST.AST, Parser>, ast: AST.AST) {
      const found = get.call(this, ast) as Parser | undefined
      if (making.has(ast)) return found
      // One memoized before the fast path was installed.
      if (found !== undefined) {
        if (wrapped.has(found)) return found
        const parser = withFastPath(ast, found)
        set.call(this, ast, parser)
        return parser
      }
      making.add(ast)
      try {
        ParseResult.decodeUnknownEither({ ast } as never)
      } finally {
        making.delete(ast)
      }
      return get.call(this, ast) as Parser | undefined
    }
    memo.set = function(this: WeakMap<AST.AST, Parser>, ast: AST.AST, parser: Parser) {
      return set.call(this, ast, withFastPath(ast, parser)) as WeakMap<AST.AST, Parser>
    }
    memo[INSTALLED] = true
  }
  return decodeFastPathInstalled()
}

/** Whether a decode made now goes through the fast path (a probe schema of its own). */
export const decodeFastPathInstalled = (): boolean => {
  const probe = new AST.TypeLiteral([new AST.PropertySignature("probe", AST.stringKeyword, false, true)], [])
  const decode = ParseResult.decodeUnknownEither({ ast: probe } as never)
  const input = { probe: "yes" }
  // The schema's own parser makes a new object; the fast path too, but it registers its decoder.
  const decoded = decode(input)
  return Either.isRight(decoded) && compiledByOptions.get(DEFAULTS)?.has(probe) === true
}

/** The fast path installed, for the server's Layers (built before what they decode). */
export const DecodeFastPathLive = Layer.effectDiscard(Effect.sync(installDecodeFastPath))

/**
 * For tests: what the fast path answers for `schema` (a value, refused, or unsure), and what the
 * schema's own parser answers, side by side.
 */
export const compareDecodes = (schema: { readonly ast: AST.AST }, input: unknown, options?: AST.ParseOptions) => {
  const taken = callerOptions(options)
  const outcome = taken === undefined ? UNSURE : compile(schema.ast, taken)(input)
  ParseResult.decodeUnknownEither(schema as never)
  const memoized = decodeMemo().get(schema.ast)!
  const own = schemaParsers.get(memoized) ?? memoized
  const result = own(input, { ...options, isEffectAllowed: true } as AST.ParseOptions)
  return {
    fast: outcome === REFUSED ? "refused" as const : outcome === UNSURE ? "unsure" as const : { value: outcome },
    schema: Either.isEither(result) ? result : undefined
  }
}
