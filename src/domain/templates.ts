/**
 * Templates users write (parameter values, later automation actions) in Jinja syntax. They are
 * rendered by @huggingface/jinja, an interpreter over its own values: a template can read the
 * context it is given and nothing of the server (no constructors, no prototypes, no host functions).
 * Checking a template's syntax uses nunjucks' parser, which says on which line a problem is (the
 * template is only parsed, never run by it).
 */
import { Template } from "@huggingface/jinja"
import { Either } from "effect"
import nunjucks from "nunjucks"

/** A filter templates may apply (`{{ value | name }}`), on top of the engine's own. */
export type TemplateFilter = (value: unknown) => unknown

/** A runtime value of the engine as plain JSON-like data. */
const plainValue = (value: unknown): unknown => {
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [k, plainValue((v as { value: unknown }).value)]))
  if (Array.isArray(value)) return value.map((v) => plainValue((v as { value: unknown }).value))
  return value
}

/** Turns `operand | name` for the given filters into calls of context functions (the engine has no filter registry). */
const callFilters = (node: unknown, names: ReadonlySet<string>): void => {
  if (typeof node !== "object" || node === null) return
  const n = node as Record<string, any>
  if (n.type === "FilterExpression" && n.filter?.type === "Identifier" && names.has(n.filter.value)) {
    const name = n.filter.value as string
    n.type = "CallExpression"
    n.callee = { type: "Identifier", value: `__filter_${name}` }
    n.args = [n.operand]
  }
  for (const value of Object.values(n)) {
    if (Array.isArray(value)) value.forEach((v) => callFilters(v, names))
    else callFilters(value, names)
  }
}

/** The rendered text, or why the template could not be parsed or rendered. */
export const renderTemplate = (
  source: string,
  context: Record<string, unknown> = {},
  filters: Readonly<Record<string, TemplateFilter>> = {}
): Either.Either<string, string> => {
  try {
    const template = new Template(source)
    const names = new Set(Object.keys(filters))
    const functions: Record<string, unknown> = {}
    if (names.size > 0) {
      callFilters(template.parsed, names)
      for (const [name, filter] of Object.entries(filters)) functions[`__filter_${name}`] = (value: unknown) => filter(plainValue(value))
    }
    return Either.right(template.render({ ...context, ...functions }))
  } catch (error) {
    return Either.left((error as Error).message)
  }
}

/** Why a template is refused: the line (1-based; 0 for limits on the whole template) and a message. */
export interface TemplateProblem {
  readonly line: number
  readonly message: string
}

const MAX_LOOPS = 10
const MAX_LOOP_DEPTH = 2

interface TemplateNode {
  readonly typename: string
  readonly fields: ReadonlyArray<string>
  readonly children?: ReadonlyArray<TemplateNode>
  readonly [field: string]: unknown
}

const isNode = (value: unknown): value is TemplateNode =>
  typeof value === "object" && value !== null && typeof (value as { typename?: unknown }).typename === "string"

/** nunjucks' parser, which its type declarations leave out. */
const parser = (nunjucks as unknown as { parser: { parse: (source: string, extensions: ReadonlyArray<unknown>, options: object) => unknown } })
  .parser

const LOOPS = new Set(["For", "AsyncEach", "AsyncAll"])

/** The number of loops and the deepest nesting of loops in a parsed template. */
const loops = (node: TemplateNode): { count: number; depth: number } => {
  const children: Array<TemplateNode> = []
  for (const field of new Set([...node.fields, "children"])) {
    const value = node[field]
    if (isNode(value)) children.push(value)
    else if (Array.isArray(value)) children.push(...value.filter(isNode))
  }
  let count = 0
  let depth = 0
  for (const child of children) {
    const inner = loops(child)
    count += inner.count
    depth = Math.max(depth, inner.depth)
  }
  return LOOPS.has(node.typename) ? { count: count + 1, depth: depth + 1 } : { count, depth }
}

/**
 * Checks that a template parses (undefined names and filters are fine: they are known only when it
 * renders) and that it keeps within the loop limits: at most 10 loops, nested at most 2 deep.
 */
export const validateTemplate = (source: string): TemplateProblem | undefined => {
  let root: TemplateNode
  try {
    root = parser.parse(source, [], {}) as TemplateNode
  } catch (error) {
    const { lineno, message } = error as { lineno?: number; message?: string }
    const text = String(message ?? error).replace(/^\(unknown path\)\s*(\[Line \d+, Column \d+\]\s*)?/, "").trim()
    return { line: lineno ?? source.split("\n").length, message: text }
  }
  const { count, depth } = loops(root)
  if (count > MAX_LOOPS) {
    return { line: 0, message: `Contains ${count} for loops. Templates can contain no more than ${MAX_LOOPS} for loops.` }
  }
  if (depth > MAX_LOOP_DEPTH) {
    return {
      line: 0,
      message: `Contains nested for loops at a depth of ${depth}. Templates can nest for loops no more than ${MAX_LOOP_DEPTH} loops deep.`
    }
  }
  return undefined
}
