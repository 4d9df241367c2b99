/**
 * Templates users write (parameter values, automation actions) in Jinja syntax, with one engine:
 * @huggingface/jinja, an interpreter over its own values (a template can read the context it is given
 * and nothing of the server: no constructors, no prototypes, no host functions). Its tokenizer and
 * parser check a template's syntax (template-syntax.ts, which also finds the line of a problem) and
 * its interpreter renders it within budgets (template-runtime.ts).
 *
 * The reference's sandbox limits are kept: at most 10 `for` loops, nested at most 2 deep, checked
 * whenever a template is checked or rendered, and `range()` of at most 100 items (refused when it
 * is called, and already when the template is checked if its arguments are literals). On top, since
 * Node has one thread for every request, a render is bounded in steps, in the size of its output and
 * of every value it makes, in what it makes in all, and in time.
 */
import { Either } from "effect"
import { rangeLength, renderProgram, TemplateBudget, type TemplateFilter, type TemplateLimits } from "./template-runtime.ts"
import { type Program, parseTemplate, type TemplateProblem } from "./template-syntax.ts"

export type { TemplateFilter, TemplateLimits, TemplateProblem }
export { TemplateBudget }
export { MAX_WHITESPACE_WORK } from "./template-syntax.ts"

export const MAX_TEMPLATE_LOOPS = 10
export const MAX_TEMPLATE_LOOP_DEPTH = 2

/** The limits of every render (see TemplateLimits). */
export const TEMPLATE_LIMITS: TemplateLimits = {
  range: 100,
  steps: 500_000,
  size: 1_000_000,
  allocation: 20_000_000,
  nesting: 500,
  depth: 200,
  milliseconds: 500
}

/** A literal integer argument (`5`, `-5`), or undefined. */
const literalInteger = (node: any): number | undefined => {
  if (node?.type === "IntegerLiteral") return node.value as number
  if (node?.type === "UnaryExpression" && (node.operator?.value === "-" || node.operator?.value === "+")) {
    const inner = literalInteger(node.argument)
    return inner === undefined ? undefined : node.operator.value === "-" ? -inner : inner
  }
  return undefined
}

/** Items of a `range(…)` call whose arguments are all literal integers; undefined otherwise. */
const literalRangeLength = (node: any): number | undefined => {
  if (node?.type !== "CallExpression" || node.callee?.type !== "Identifier" || node.callee.value !== "range") return undefined
  const args = (node.args as Array<unknown>).map(literalInteger)
  if (args.length < 1 || args.length > 3 || args.some((arg) => arg === undefined)) return undefined
  const [start, stop, step] = args.length === 1 ? [0, args[0]!, 1] : [args[0]!, args[1]!, args[2] ?? 1]
  return step === 0 ? undefined : rangeLength(start, stop, step)
}

/**
 * What the limits checked before rendering look at in a parsed template: its `for` loops, their
 * deepest nesting, and the largest `range()` of literal arguments (walked without recursion:
 * templates may nest deeply).
 */
const inspect = (program: Program): { loops: number; depth: number; range: number } => {
  let loops = 0
  let depth = 0
  let range = 0
  const pending: Array<readonly [unknown, number]> = [[program, 0]]
  while (pending.length > 0) {
    const [node, outer] = pending.pop()!
    if (Array.isArray(node)) {
      for (const item of node) pending.push([item, outer])
      continue
    }
    if (node instanceof Map) {
      for (const [key, value] of node) pending.push([key, outer], [value, outer])
      continue
    }
    if (typeof node !== "object" || node === null) continue
    const inner = (node as { type?: unknown }).type === "For" ? outer + 1 : outer
    if (inner > outer) {
      loops++
      depth = Math.max(depth, inner)
    }
    range = Math.max(range, literalRangeLength(node) ?? 0)
    for (const value of Object.values(node)) if (typeof value === "object" && value !== null) pending.push([value, inner])
  }
  return { loops, depth, range }
}

/** The parsed template, or why it is refused: it does not parse, or it has too many loops. */
const compile = (source: string): Either.Either<Program, TemplateProblem> => {
  const parsed = parseTemplate(source)
  if ("problem" in parsed) return Either.left(parsed.problem)
  const { loops, depth, range } = inspect(parsed.program)
  if (loops > MAX_TEMPLATE_LOOPS) {
    return Either.left({ line: 0, message: `Contains ${loops} for loops. Templates can contain no more than ${MAX_TEMPLATE_LOOPS} for loops.` })
  }
  if (depth > MAX_TEMPLATE_LOOP_DEPTH) {
    return Either.left({
      line: 0,
      message: `Contains nested for loops at a depth of ${depth}. Templates can nest for loops no more than ${MAX_TEMPLATE_LOOP_DEPTH} loops deep.`
    })
  }
  // Refused when it renders anyway; when its arguments are written out, it can be refused now.
  if (range > TEMPLATE_LIMITS.range) {
    return Either.left({ line: 0, message: `Range too big. The sandbox blocks ranges larger than MAX_TEMPLATE_RANGE=${TEMPLATE_LIMITS.range}.` })
  }
  return Either.right(parsed.program)
}

/**
 * Checks that a template parses (undefined names and filters are fine: they are known only when it
 * renders) and keeps within the loop limits. Undefined when it does.
 */
export const validateTemplate = (source: string): TemplateProblem | undefined =>
  Either.match(compile(source), { onLeft: (problem) => problem, onRight: () => undefined })

const messageOf = (error: unknown) =>
  error instanceof RangeError && /call stack/i.test(error.message)
    ? "Template nests too deeply to render."
    : String((error as Error)?.message ?? error)

/** A budget for the templates of one request or automation action (TEMPLATE_LIMITS unless a test narrows them). */
export const templateBudget = (limits: TemplateLimits = TEMPLATE_LIMITS) => new TemplateBudget(limits)

/**
 * The rendered text, or why the template could not be checked or rendered. Each template is checked
 * before it renders; the render spends from `budget`, shared by the templates of one request or
 * action (a fresh one when none is given).
 */
export const renderTemplate = (
  source: string,
  context: Record<string, unknown> = {},
  filters: Readonly<Record<string, TemplateFilter>> = {},
  budget: TemplateBudget = templateBudget()
): Either.Either<string, string> => {
  const compiled = compile(source)
  if (Either.isLeft(compiled)) return Either.left(compiled.left.message)
  try {
    return Either.right(renderProgram(compiled.right, context, filters, budget))
  } catch (error) {
    return Either.left(messageOf(error))
  }
}
