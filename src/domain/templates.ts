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

/** The rendered text, or why the template could not be parsed or rendered. */
export const renderTemplate = (source: string, context: Record<string, unknown> = {}): Either.Either<string, string> => {
  try {
    return Either.right(new Template(source).render(context))
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
