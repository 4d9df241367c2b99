/** The 422 detail items of a decoding failure, for values too deep to walk. */
import { describe, expect, it } from "@effect/vitest"
import { Either, ParseResult, Schema } from "effect"
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
