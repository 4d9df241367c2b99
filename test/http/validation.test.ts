/** The 422 detail items of a decoding failure, and the lax reading of numbers and booleans. */
import { describe, expect, it } from "@effect/vitest"
import { Either, ParseResult, Schema } from "effect"
import * as Lax from "../../src/domain/lax.ts"
import { detailItems } from "../../src/http/validation.ts"

interface Node {
  readonly name: string
  readonly children: ReadonlyArray<Node>
}
const Node: Schema.Schema<Node> = Schema.Struct({
  name: Schema.String,
  children: Schema.Array(Schema.suspend(() => Node))
})

/** A chain of `depth` nodes whose innermost one has no name. */
const chain = (depth: number) => {
  let node: Record<string, unknown> = { children: [] }
  for (let i = 1; i < depth; i++) node = { name: `n${i}`, children: [node] }
  return node
}

const problems = (value: unknown) => {
  const decoded = Schema.decodeUnknownEither(Node, { errors: "all" })(value)
  if (Either.isRight(decoded)) throw new Error("expected a decoding failure")
  return detailItems("body", decoded.left.issue)
}

describe("detail items", () => {
  it("name the place of a problem deep inside a value", () => {
    const items = problems(chain(3))
    expect(items).toEqual([{ loc: ["body", "children", 0, "children", 0, "name"], type: "missing", msg: "Field required", input: { children: [] } }])
  })

  it("are one recursion_loop problem for a value nested too deeply to walk", () => {
    // A failure 100,000 levels down (deeper than decoding itself goes, hence built by hand).
    let issue: ParseResult.ParseIssue = new ParseResult.Type(Schema.String.ast, 1)
    for (let i = 0; i < 100_000; i++) issue = new ParseResult.Pointer("child", {}, issue)
    expect(detailItems("body", issue)).toEqual([
      { loc: ["body"], type: "recursion_loop", msg: "Recursion error - the value is nested too deeply to validate" }
    ])
  })
})

/** The value `schema` reads from `input`, or the type and msg of its one problem. */
const read = <A, I>(schema: Schema.Schema<A, I>, input: unknown) => {
  const decoded = Schema.decodeUnknownEither(schema, { errors: "all" })(input)
  if (Either.isRight(decoded)) return decoded.right
  const items = detailItems("body", decoded.left.issue)
  expect(items).toHaveLength(1)
  return { type: items[0]!.type, msg: items[0]!.msg }
}

const fails = (type: string) => expect.objectContaining({ type })

describe("lax numbers and booleans (pydantic's conversion table)", () => {
  it("read integers from numbers, booleans and integer text", () => {
    const cases: Array<[unknown, unknown]> = [
      [3, 3], [3.0, 3], ["1", 1], [" 7 ", 7], ["+5", 5], ["-3", -3], ["007", 7], ["1_000", 1000], ["2.000", 2], [true, 1], [false, 0],
      ["1.5", fails("int_parsing")], ["1e3", fails("int_parsing")], ["", fails("int_parsing")], ["1__0", fails("int_parsing")],
      ["_1", fails("int_parsing")], ["1.", fails("int_parsing")], ["+-1", fails("int_parsing")], ["9".repeat(4301), fails("int_parsing_size")],
      [1.5, fails("int_from_float")], [null, fails("int_type")], [{}, fails("int_type")], [[1], fails("int_type")]
    ]
    for (const [input, expected] of cases) expect(read(Lax.Int, input), JSON.stringify(input)).toEqual(expected)
    expect(read(Lax.Int, "x")).toEqual({ type: "int_parsing", msg: "Input should be a valid integer, unable to parse string as an integer" })
  })

  it("read numbers from numbers, booleans and number text", () => {
    const cases: Array<[unknown, unknown]> = [
      [1.5, 1.5], ["1.5", 1.5], [" 2 ", 2], [".5", 0.5], ["5.", 5], ["1e3", 1000], ["-1E-2", -0.01], ["1_0.5", 10.5], [true, 1],
      ["abc", fails("float_parsing")], ["0x10", fails("float_parsing")], ["", fails("float_parsing")], ["1e", fails("float_parsing")],
      ["inf", fails("finite_number")], ["-Infinity", fails("finite_number")], ["NaN", fails("finite_number")], [[], fails("float_type")]
    ]
    for (const [input, expected] of cases) expect(read(Lax.Float, input), JSON.stringify(input)).toEqual(expected)
    expect(read(Lax.Float, "x")).toEqual({ type: "float_parsing", msg: "Input should be a valid number, unable to parse string as a number" })
  })

  it("read booleans from the words and numbers pydantic takes, in any case", () => {
    for (const word of ["true", "True", "TRUE", "t", "Y", "yes", "on", "1"]) expect(read(Lax.Bool, word), word).toBe(true)
    for (const word of ["false", "F", "n", "No", "OFF", "0"]) expect(read(Lax.Bool, word), word).toBe(false)
    expect(read(Lax.Bool, 1)).toBe(true)
    expect(read(Lax.Bool, 0)).toBe(false)
    expect(read(Lax.Bool, " true")).toEqual({ type: "bool_parsing", msg: "Input should be a valid boolean, unable to interpret input" })
    expect(read(Lax.Bool, "maybe")).toEqual(fails("bool_parsing"))
    expect(read(Lax.Bool, 2)).toEqual(fails("bool_parsing"))
    expect(read(Lax.Bool, 0.5)).toEqual({ type: "bool_type", msg: "Input should be a valid boolean" })
    expect(read(Lax.Bool, null)).toEqual(fails("bool_type"))
    expect(read(Lax.TextBool, "Off")).toBe(false)
    expect(read(Lax.TextBool, "2")).toEqual(fails("bool_parsing"))
  })

  it("check bounds on the number read, each bound reported on its own", () => {
    const limit = Lax.int({ ge: 0, le: 50 })
    expect(read(limit, "50")).toBe(50)
    expect(read(limit, 51)).toEqual({ type: "less_than_equal", msg: "Input should be less than or equal to 50" })
    expect(read(limit, "-1")).toEqual({ type: "greater_than_equal", msg: "Input should be greater than or equal to 0" })
    expect(read(Lax.float({ gt: 0, lt: 1 }), 1)).toEqual({ type: "less_than", msg: "Input should be less than 1" })
    // Schema's own two-sided check says which side was crossed.
    const between = Schema.Int.pipe(Schema.between(60, 86_400))
    expect(read(between, 10)).toEqual({ type: "greater_than_equal", msg: "Input should be greater than or equal to 60" })
    expect(read(between, 86_401)).toEqual({ type: "less_than_equal", msg: "Input should be less than or equal to 86400" })
  })

  it("encode to the plain value, and write duration bounds as pydantic does", () => {
    expect(Schema.encodeSync(Lax.int({ ge: 1 }))(3)).toBe(3)
    expect(Schema.encodeSync(Lax.Bool)(true)).toBe(true)
    expect(Schema.encodeSync(Lax.TextBool)(false)).toBe("false")
    expect([0, 10, 90, 3601, 86_400, 1.5].map(Lax.durationText)).toEqual([
      "0 seconds",
      "10 seconds",
      "1 minute and 30 seconds",
      "1 hour and 1 second",
      "1 day",
      "1 second and 500000 microseconds"
    ])
  })
})
