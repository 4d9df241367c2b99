import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { tokenize } from "@huggingface/jinja"
import { renderTemplate, TEMPLATE_LIMITS, templateBudget, validateTemplate } from "../../src/domain/templates.ts"
import { tokenOffsets } from "../../src/domain/template-syntax.ts"

/** The rendered text, failing the test when the template is refused. */
const rendered = (source: string, context: Record<string, unknown> = {}) => {
  const result = renderTemplate(source, context)
  if (Either.isLeft(result)) throw new Error(`refused: ${result.left}`)
  return result.right
}

/** Why the template is refused, checking that saying so took well under a second. */
const refusal = (source: string, context: Record<string, unknown> = {}) => {
  const started = performance.now()
  const result = renderTemplate(source, context)
  const elapsed = performance.now() - started
  expect(elapsed, source).toBeLessThan(1000)
  if (Either.isRight(result)) throw new Error(`rendered ${result.right.length} characters: ${source}`)
  return result.left
}

/** A namespace whose `x` is doubled `times` times from `seed`, then `rest`. */
const doubled = (times: number, rest: string) =>
  `{% set ns = namespace(x='a') %}{% for i in range(${times}) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}${rest}`

describe("validateTemplate", () => {
  it("says on which line a template stops parsing", () => {
    const cases: Array<[string, number, RegExp]> = [
      ["1 - {{ hello }} world!\n2 - oops, this {{ ain't } gonna work\n3 - this is fine", 2, /end of input/],
      ["{% if x %}", 1, /^Unexpected end of template\. The innermost block that needs to be closed is 'if'\.$/],
      ["a\n{% set x %}\nabc", 3, /innermost block that needs to be closed is 'set'/],
      ["a\nb {{ x | }}\nc", 2, /Unexpected token/],
      ["a\n{% for x in y %}\n{% endif %}\n", 3, /endif/],
      ["a\n\n{{ x @ y }}", 3, /^Unexpected character: @$/],
      ["a\n{# x\n\n", 2, /^Missing end of comment tag$/],
      ["a\n{{ 'abc\\q' }}", 2, /^Unexpected escaped character: q$/],
      // Strings and comments over several lines, and whitespace control, before the problem.
      ["{{ 'a\nb\nc' }}\n{{ x @ }}", 4, /@/],
      ["{# a\nb #}\n{{ 1 + }}", 3, /Unexpected token/],
      ["a  \n{%- if x -%}\n  b\n{%- endif -%}\n{{ x | }}", 5, /Unexpected token/],
      // A tag this engine would drop silently is refused, as the reference refuses it.
      ["ok\n{% generation %}", 2, /^Encountered unknown tag 'generation'\.$/]
    ]
    for (const [source, line, message] of cases) {
      const problem = validateTemplate(source)
      expect(problem?.line, source).toBe(line)
      expect(problem?.message, source).toMatch(message)
    }
  })

  it("accepts what parses: undefined names and filters are only known when it renders", () => {
    expect(validateTemplate("Hello {{ nobody | no_such_filter }}{% for x in y %}{{ loop.index }}{% endfor %}")).toBeUndefined()
    expect(validateTemplate("")).toBeUndefined()
    expect(validateTemplate("    {{ indented }}\n".repeat(1000))).toBeUndefined()
  })

  it("places every token of the engine at its place in the source", () => {
    const source = "a {{- x -}}  b\n{% if 'q\\'s' %}{# c\n#}{{ -1.5 + f(y, z=[1]) }}{%- endif %}\n"
    const tokens = tokenize(source, {})
    const offsets = tokenOffsets(source, tokens)
    const raw = (type: string, value: string) =>
      ({ Text: value, StringLiteral: "'", OpenExpression: "{{", OpenStatement: "{%", CloseExpression: "-}}", CloseStatement: "%}", Comment: "{#" })[type] ?? value
    tokens.forEach((token: { type: string; value: string }, i: number) => {
      const expected = raw(token.type, token.value)
      const at = source.slice(offsets[i])
      expect(at.startsWith(expected) || (token.type === "CloseExpression" && at.startsWith("}}")), `${token.type} ${token.value}`).toBe(true)
    })
  })

  it("keeps the reference's loop limits, with line 0", () => {
    expect(validateTemplate("{% for a in b %}{% endfor %}".repeat(10))).toBeUndefined()
    expect(validateTemplate("{% for a in b %}{% endfor %}".repeat(11))).toEqual({
      line: 0,
      message: "Contains 11 for loops. Templates can contain no more than 10 for loops."
    })
    expect(validateTemplate("{% for a in b %}{% for c in a %}{% for d in c %}{% endfor %}{% endfor %}{% endfor %}")).toEqual({
      line: 0,
      message: "Contains nested for loops at a depth of 3. Templates can nest for loops no more than 2 loops deep."
    })
  })

  it("refuses a range() of more than 100 items when its arguments are written out", () => {
    const tooBig = { line: 0, message: "Range too big. The sandbox blocks ranges larger than MAX_TEMPLATE_RANGE=100." }
    expect(validateTemplate("{{ range(200000000) | length }}")).toEqual(tooBig)
    expect(validateTemplate("{{ range(0, -1000, -1) }}")).toEqual(tooBig)
    expect(validateTemplate("{{ range(100) }}{{ range(5, -95, -1) }}")).toBeUndefined()
    // Known only when it renders.
    expect(validateTemplate("{% set n = 200000000 %}{{ range(n) }}")).toBeUndefined()
  })

  it("refuses long runs of whitespace quickly (the engine's preprocessing is quadratic in them)", () => {
    const started = performance.now()
    const problem = validateTemplate(`{{ x${" ".repeat(200_000)}}}`)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(problem).toMatchObject({ line: 0, message: expect.stringMatching(/^Contains too much whitespace in a row/) })
    expect(validateTemplate(`{{ x${" ".repeat(2000)}}}`)).toBeUndefined()
  })

  it("refuses a template nested too deeply to parse, without failing", () => {
    const problem = validateTemplate(`{{ ${"(".repeat(5000)}1${")".repeat(5000)} }}`)
    expect(problem?.message).toBe("Template is nested too deeply")
  })
})

describe("renderTemplate", () => {
  it("renders as the reference does: blocks keep their newlines, the template's last newline goes", () => {
    expect(rendered("{% if true %}\nx\n{% endif %}")).toBe("\nx\n")
    expect(rendered("a\n")).toBe("a")
    expect(rendered("{% for x in items %}{{ loop.index }}:{{ x | upper }} {% endfor %}", { items: ["a", "b"] })).toBe("1:A 2:B ")
    expect(rendered("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}")).toBe("6")
    expect(rendered("{{ none is none }} {{ True }} {{ {'a': [1, 'b']} | tojson }}")).toBe('true true {"a": [1, "b"]}')
    expect(rendered("{{ missing }}|{{ missing.deeper }}")).toBe("|")
  })

  it("applies the filters it is given to plain data", () => {
    const result = renderTemplate("{{ who | shout }}", { who: { name: "ann" } }, { shout: (value) => `${(value as { name: string }).name.toUpperCase()}!` })
    expect(result).toEqual(Either.right("ANN!"))
  })

  it("gives range() at most 100 items, counted from its arguments before anything is made", () => {
    expect(rendered("{{ range(100) | length }} {{ range(5, 0, -2) | join(',') }} {{ range(3, 3) | length }}")).toBe("100 5,3,1 0")
    const tooBig = "Range too big. The sandbox blocks ranges larger than MAX_TEMPLATE_RANGE=100."
    expect(refusal("{{ range(200000000) | length }}")).toBe(tooBig)
    expect(refusal("{% set n = 200000000 %}{{ range(n) | length }}")).toBe(tooBig)
    expect(refusal("{% set n = -200000000 %}{{ range(0, n, -1) | length }}")).toBe(tooBig)
    expect(refusal("{% set n = 10 ** 300 %}{{ range(n) | length }}")).toBe(tooBig)
    expect(refusal("{% set n = 101 %}{{ range(n) | length }}")).toBe(tooBig)
    expect(refusal("{{ range(0, 10, 0.5) | length }}")).toBe("'float' object cannot be interpreted as an integer")
    expect(refusal("{% set s = 0 %}{{ range(0, 10, s) | length }}")).toBe("range() arg 3 must not be zero")
  })

  it("refuses hostile templates quickly, each with a message naming the limit", () => {
    const tooLarge = /more than 1,000,000 characters \(the limit of any value and of the output\)/
    const cases: Array<[string, string, RegExp]> = [
      [
        "string doubling in nested loops",
        "{% set ns = namespace(x='ab') %}{% for i in range(100) %}{% for j in range(100) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}{% endfor %}{{ ns.x | length }}",
        tooLarge
      ],
      [
        "list doubling",
        "{% set ns = namespace(x=[1]) %}{% for i in range(100) %}{% for j in range(100) %}{% set ns.x = ns.x + ns.x %}{% endfor %}{% endfor %}{{ ns.x | length }}",
        tooLarge
      ],
      [
        "lists of themselves (an exponential tree)",
        "{% set ns = namespace(x=[1]) %}{% for i in range(100) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x | tojson | length }}",
        tooLarge
      ],
      ["indent of a huge width", "{{ 'a\\nb' | indent(1000000000) }}", /^indent\(1000000000\) would make more than 1,000,000 characters/],
      ["indent of a huge width by keyword", "{% filter indent(width=100000000, first=true) %}a\nb{% endfilter %}", /^indent\(100000000\) would make/],
      [
        "replace blowing up",
        "{% set ns = namespace(x='aaaaaaaaaa') %}{% for i in range(100) %}{% set ns.x = ns.x.replace('a', 'aaaaaaaaaa') %}{% endfor %}",
        tooLarge
      ],
      [
        "replace filter blowing up",
        "{% set ns = namespace(x='aaaaaaaaaa') %}{% for i in range(100) %}{% set ns.x = ns.x | replace('a', 'aaaaaaaaaa') %}{% endfor %}",
        tooLarge
      ],
      ["replace of the empty string", doubled(17, "{{ ns.x.replace('', 'xxxxxxxxxx') | length }}"), /^replace\(\) would make more than/],
      ["join with a huge separator", doubled(19, "{{ range(100) | join(ns.x) | length }}"), /^join\(\) would make more than/],
      ["tojson with a huge indent", "{{ range(100) | tojson(indent=100000000) }}", /^tojson\(\) would make more than/],
      ["split into a huge list", doubled(19, "{{ ns.x.split('a') | length }}"), /^split\(\) would make more than/],
      ["a macro calling itself", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", /^Template nests expressions or macro calls more than 500 deep\.$/],
      [
        "a macro calling itself twice",
        "{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}",
        /^Template rendering took more than (500,000 steps|500 ms) \(the limit of the templates of one request or automation action\)\.$/
      ],
      ["an output growing past the limit", doubled(13, "{{ ns.x }}".repeat(200)), /^Template output is longer than 1,000,000 characters/],
      ["a loop's output growing past the limit", doubled(13, "{% for i in range(10) %}{% for j in range(20) %}{{ ns.x }}{% endfor %}{% endfor %}"), tooLarge],
      [
        "many large values made one after the other",
        doubled(19, "{% for i in range(100) %}{% set y = ns.x ~ i %}{% endfor %}"),
        /^Template rendering made more than 20,000,000 characters of values in all \(the limit of the templates of one request or automation action\)\.$/
      ],
      ["a namespace holding itself", "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", /^A namespace cannot be put inside a list, a dict or a namespace/],
      ["a list holding a namespace", "{% set ns = namespace() %}{{ [ns, ns] }}", /^A namespace cannot be put inside/],
      ["an expression nested too deeply", `{{ ${Array(600).fill("'a'").join(" ~ ")} }}`, /^Template nests expressions or macro calls more than 500 deep\.$/]
    ]
    for (const [name, source, message] of cases) expect(refusal(source), name).toMatch(message)
  })

  it("leaves large values handed in alone, and limits what a template makes from them", () => {
    const big = "x".repeat(3_000_000)
    expect(rendered("{{ big | length }} {{ big[:3] }} {{ items | length }}", { big, items: Array(100_000).fill(1) })).toBe("3000000 xxx 100000")
    expect(refusal("{{ big ~ '!' }}", { big })).toMatch(/more than 1,000,000 characters/)
    expect(refusal("{{ [big] | length }}", { big })).toMatch(/more than 1,000,000 characters/)
  })

  it("spends one budget across the templates it is shared by", () => {
    const budget = templateBudget({ ...TEMPLATE_LIMITS, steps: 1000 })
    const loop = "{% for i in range(100) %}{{ i + i + i + i }}{% endfor %}"
    expect(Either.isRight(renderTemplate(loop, {}, {}, budget))).toBe(true)
    expect(budget.steps).toBeGreaterThan(500)
    expect(renderTemplate(loop, {}, {}, budget)).toEqual(
      Either.left("Template rendering took more than 1,000 steps (the limit of the templates of one request or automation action).")
    )
    const slow = templateBudget({ ...TEMPLATE_LIMITS, milliseconds: 0 })
    expect(renderTemplate(loop, {}, {}, slow)).toEqual(
      Either.left("Template rendering took more than 0 ms (the limit of the templates of one request or automation action).")
    )
  })
})
