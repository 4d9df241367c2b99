/**
 * Rendering templates within budgets. @huggingface/jinja interprets templates over its own values (a
 * template reaches nothing of the server), but without limits: `range(200000000)` allocates two
 * hundred million numbers and kills the process, doubling a string in a loop does the same, and
 * loops over loops block the event loop. Here its interpreter is subclassed: every evaluation is a
 * step; every value a step produces is measured (as much as it would take written out as JSON) before
 * the template can use it; what the render has made in all is added up; and the filters and methods
 * whose output grows with a number they are given (`indent`, `replace`, `join`, `tojson`, `split`)
 * are checked from their arguments before they run. Values handed in (the context) are not limited:
 * they already exist; what a template makes from them is.
 */
import { Environment, Interpreter } from "@huggingface/jinja"
import type { Program } from "./template-syntax.ts"
import { groupThousands } from "./strings.ts"
import {
  ArrayValue,
  children,
  FunctionValue,
  IntegerValue,
  integer,
  isContainer,
  measureAny,
  occurrences,
  replacedLength,
  rangeLength,
  string,
  StringValue,
  TemplateLimitError,
  type Value
} from "./template-values.ts"

export { rangeLength, TemplateLimitError }

/** The limits a render keeps within. */
export interface TemplateLimits {
  /** Items `range()` may produce. */
  readonly range: number
  /** Evaluations (of a text, tag, expression or filter) in one render. */
  readonly steps: number
  /** Characters of the output and of any value made while rendering (counted as JSON). */
  readonly size: number
  /** Characters (and list items) made in all while rendering. */
  readonly allocation: number
  /** Evaluations inside one another (deep expressions, macros calling macros). */
  readonly nesting: number
  /** Levels of lists and dicts inside one another in a value made while rendering. */
  readonly depth: number
  /** Wall time of one render, a backstop for steps that take long on large values handed in. */
  readonly milliseconds: number
}

/**
 * What the renders of one request or one automation action may spend in all (steps, values made,
 * time): a request may carry many templates, and each is rendered on the one thread.
 */
export class TemplateBudget {
  steps = 0
  allocated = 0
  readonly started = performance.now()
  /** Time spent handing values to templates (their size is not the templates' doing), not counted. */
  excluded = 0
  constructor(readonly limits: TemplateLimits) {}
}

type Node = { readonly type: string; readonly [field: string]: any }

/** The engine's interpreter, with the methods it calls on itself (private in its declarations) visible to a subclass. */
interface InterpreterMethods {
  evaluate(node: Node | undefined, environment: Environment): Value
  evaluateBinaryExpression(node: Node, environment: Environment): Value
  applyFilter(operand: Value, filter: Node, environment: Environment): Value
  evaluateMemberExpression(node: Node, environment: Environment): Value
  evaluateArguments(args: ReadonlyArray<Node>, environment: Environment): [Array<Value>, Map<string, Value>]
}
const EngineInterpreter = Interpreter as unknown as new (environment: Environment) => InterpreterMethods

/** An argument already evaluated, passed back to the engine as a node. */
const EVALUATED = "BatonEvaluated"
const evaluated = (value: Value): Node => ({ type: EVALUATED, value })

const PER_BUDGET = "the limit of the templates of one request or automation action"

// ----------------------------------------------------------------------------------------------
// The interpreter

class BoundedInterpreter extends EngineInterpreter {
  private nesting = 0
  private readonly limits: TemplateLimits
  /** Values already measured and counted, and those handed in. */
  private readonly seen = new WeakSet<object>()

  constructor(
    environment: Environment,
    private readonly budget: TemplateBudget,
    private readonly filters: ReadonlyMap<string, Value>
  ) {
    super(environment)
    this.limits = budget.limits
  }

  private over(message: string): never {
    throw new TemplateLimitError(message)
  }

  /** Marks values handed in (and everything in them) as existing already. */
  adopt(value: Value) {
    const pending = [value]
    while (pending.length > 0) {
      const next = pending.pop()!
      if (this.seen.has(next)) continue
      this.seen.add(next)
      for (const item of children(next)) pending.push(item)
    }
  }

  private allocate(amount: number) {
    this.budget.allocated += amount
    if (this.budget.allocated > this.limits.allocation) {
      this.over(`Template rendering made more than ${groupThousands(this.limits.allocation)} characters of values in all (${PER_BUDGET}).`)
    }
  }

  /** Counts a value a step made, and what is new in it (lists the engine filled itself, as `split` does). */
  private count(value: Value) {
    const pending = [value]
    let amount = 0
    while (pending.length > 0) {
      const next = pending.pop()!
      if (this.seen.has(next)) continue
      this.seen.add(next)
      if (next.type === "StringValue") amount += next.value.length
      for (const item of children(next)) {
        amount++
        pending.push(item)
      }
    }
    this.allocate(amount)
  }

  /** Refuses a value a step made when it is too large or too deep. */
  private check(value: Value) {
    const namespace = value.type === "NamespaceValue"
    if (!namespace && value.type !== "StringValue" && !isContainer(value)) return
    if (!namespace && this.seen.has(value)) return
    const { weight, depth } = measureAny(value)
    if (weight > this.limits.size) {
      this.over(`Template made a value of more than ${groupThousands(this.limits.size)} characters (the limit of any value and of the output).`)
    }
    if (depth > this.limits.depth) this.over(`Template made a value nested more than ${groupThousands(this.limits.depth)} levels deep.`)
    if (!namespace) this.count(value)
  }

  /**
   * Charges a step that walks a large value (a filter over a list, a membership test) with steps in
   * proportion, one per 64 items or 1,024 characters: a value handed in may be large.
   */
  private charge(value: Value) {
    const items = Array.isArray(value.value) ? value.value.length : value.value instanceof Map ? value.value.size : typeof value.value === "string" ? value.value.length >> 4 : 0
    if (items < 64) return
    this.budget.steps += items >> 6
    if (this.budget.steps > this.limits.steps) this.over(`Template rendering took more than ${groupThousands(this.limits.steps)} steps (${PER_BUDGET}).`)
    this.checkTime()
  }

  override evaluateBinaryExpression(node: Node, environment: Environment): Value {
    const operator = node.operator.value as string
    if (operator === "and" || operator === "or") return super.evaluateBinaryExpression(node, environment)
    const left = this.evaluate(node.left, environment)
    const right = this.evaluate(node.right, environment)
    if (operator === "in" || operator === "not in") this.charge(right)
    return super.evaluateBinaryExpression({ ...node, left: evaluated(left), right: evaluated(right) }, environment)
  }

  /** Refuses to go on once the budget's steps or time are spent. */
  checkTime() {
    if (performance.now() - this.budget.started - this.budget.excluded > this.limits.milliseconds) {
      this.over(`Template rendering took more than ${groupThousands(this.limits.milliseconds)} ms (${PER_BUDGET}).`)
    }
  }

  override evaluate(node: Node | undefined, environment: Environment): Value {
    if (node?.type === EVALUATED) return node.value as Value
    const steps = ++this.budget.steps
    if (steps > this.limits.steps) this.over(`Template rendering took more than ${groupThousands(this.limits.steps)} steps (${PER_BUDGET}).`)
    // Wall time as a backstop only: steps bound the work, except steps over large values handed in.
    if ((steps & 15) === 0) this.checkTime()
    if (this.nesting >= this.limits.nesting) {
      this.over(`Template nests expressions or macro calls more than ${groupThousands(this.limits.nesting)} deep.`)
    }
    this.nesting++
    try {
      const value = super.evaluate(node, environment)
      this.check(value)
      return value
    } finally {
      this.nesting--
    }
  }

  /** The engine's block: the text of each statement in turn, counted, the whole kept within the size limit. */
  evaluateBlock(statements: ReadonlyArray<Node>, environment: Environment): Value {
    let result = ""
    for (const statement of statements) {
      const value = this.evaluate(statement, environment)
      if (value.type === "NullValue" || value.type === "UndefinedValue") continue
      const text = value.toString()
      this.allocate(text.length)
      if (result.length + text.length > this.limits.size) {
        this.over(`Template output is longer than ${groupThousands(this.limits.size)} characters (the limit of any value and of the output).`)
      }
      result += text
    }
    return new StringValue(result)
  }

  override applyFilter(operand: Value, filter: Node, environment: Environment): Value {
    this.charge(operand)
    if (filter.type === "Identifier") {
      const own = this.filters.get(filter.value)
      if (own !== undefined) return (own.value as (args: Array<Value>, environment: Environment) => Value)([operand], environment)
    }
    const name = filter.type === "CallExpression" && filter.callee.type === "Identifier" ? (filter.callee.value as string) : undefined
    if (name === undefined || !GUARDED_FILTERS.has(name)) return super.applyFilter(operand, filter, environment)
    const [args, kwargs] = this.evaluateArguments(filter.args, environment)
    this.guardFilter(name, operand, args, kwargs)
    const passed = [
      ...args.map(evaluated),
      ...[...kwargs].map(([key, value]) => ({ type: "KeywordArgumentExpression", key: { type: "Identifier", value: key }, value: evaluated(value) }))
    ]
    return super.applyFilter(operand, { ...filter, args: passed }, environment)
  }

  /** Refuses a filter call whose output would be too large, before it is made. */
  private guardFilter(name: string, operand: Value, args: ReadonlyArray<Value>, kwargs: ReadonlyMap<string, Value>) {
    const limit = this.limits.size
    const tooLarge = (what: string, size: number) => {
      if (size > limit) this.over(`${what} would make more than ${groupThousands(limit)} characters (the limit of any value and of the output).`)
    }
    const text = string(operand)
    switch (name) {
      case "indent": {
        const width = integer(args[0] ?? kwargs.get("width")) ?? 4
        if (text !== undefined) tooLarge(`indent(${width})`, text.length + Math.max(width, 0) * occurrences(text, "\n", Infinity) + width)
        return
      }
      case "replace": {
        const [old, replacement] = [string(args[0]), string(args[1])]
        const count = integer(args[2]?.type === "KeywordArgumentsValue" ? undefined : args[2]) ?? integer(kwargs.get("count"))
        if (text !== undefined && old !== undefined && replacement !== undefined) tooLarge("replace()", replacedLength(text, old, replacement, count))
        return
      }
      case "join": {
        const separator = string(args[0] ?? kwargs.get("separator")) ?? ""
        const items = text !== undefined ? text.length : Array.isArray(operand.value) ? operand.value.length : 0
        tooLarge("join()", separator.length * Math.max(items - 1, 0) + (text?.length ?? 0))
        return
      }
      case "tojson": {
        const indent = integer(kwargs.get("indent")) ?? 0
        const separators = kwargs.get("separators")
        const separatorLength = Array.isArray(separators?.value)
          ? (separators.value as Array<Value>).reduce((sum, part) => sum + (string(part)?.length ?? 0), 0)
          : 4
        const { weight, depth, nodes } = measureAny(operand)
        // Escapes take at most 6 characters for one; each item gets its line's indentation and the separators.
        tooLarge("tojson()", 6 * weight + nodes * (Math.max(indent, 0) * (depth + 1) + 1 + separatorLength))
        return
      }
    }
  }

  override evaluateMemberExpression(node: Node, environment: Environment): Value {
    const object = this.evaluate(node.object, environment)
    const value = super.evaluateMemberExpression({ ...node, object: evaluated(object) }, environment)
    const text = string(object)
    if (text === undefined || value.type !== "FunctionValue") return value
    const method = value === object.builtins.get("replace") ? "replace" : value === object.builtins.get("split") ? "split" : undefined
    if (method === undefined) return value
    const call = value.value as (args: Array<Value>, environment: Environment) => Value
    return new FunctionValue((args: Array<Value>, scope: Environment) => {
      const limit = this.limits.size
      if (method === "replace") {
        const [old, replacement] = [string(args[0]), string(args[1])]
        const countArg = args[2]?.type === "KeywordArgumentsValue" ? (args[2].value as Map<string, Value>).get("count") : args[2]
        if (old !== undefined && replacement !== undefined && replacedLength(text, old, replacement, integer(countArg)) > limit) {
          this.over(`replace() would make more than ${groupThousands(limit)} characters (the limit of any value and of the output).`)
        }
      } else {
        const separator = string(args[0])
        const most = integer(args[1]) ?? -1
        const found = separator === undefined ? Math.ceil(text.length / 2) : separator === "" ? 0 : occurrences(text, separator)
        const parts = (most < 0 ? found : Math.min(found, most)) + 1
        // Each part is an item of the list: written out, at least its quotes and a separator.
        if (text.length + parts * 4 > limit) this.over(`split() would make more than ${groupThousands(limit)} characters (the limit of any value and of the output).`)
      }
      return call(args, scope)
    })
  }
}

const GUARDED_FILTERS = new Set(["indent", "replace", "join", "tojson"])

/** A value's type as the reference names it in messages. */
const typeName = (value: Value) =>
  ({ FloatValue: "float", StringValue: "str", ArrayValue: "list", TupleValue: "tuple", ObjectValue: "dict", NullValue: "NoneType", UndefinedValue: "Undefined" })[
    value.type
  ] ?? value.type

/** `range()` as the reference's sandbox allows it: integers only, at most `limit` items, refused before anything is made. */
const boundedRange = (limit: number) =>
  new FunctionValue((args: Array<Value>) => {
    if (args.some((arg) => arg.type === "KeywordArgumentsValue")) throw new Error("range() takes no keyword arguments")
    if (args.length < 1 || args.length > 3) throw new Error(`range expected at least 1 and at most 3 arguments, got ${args.length}`)
    const numbers = args.map((arg) => {
      if (arg.type !== "IntegerValue" && arg.type !== "BooleanValue") throw new Error(`'${typeName(arg)}' object cannot be interpreted as an integer`)
      return Number(arg.value)
    })
    const [start, stop, step] = numbers.length === 1 ? [0, numbers[0]!, 1] : [numbers[0]!, numbers[1]!, numbers[2] ?? 1]
    if (step === 0) throw new Error("range() arg 3 must not be zero")
    const length = rangeLength(start, stop, step)
    if (length > limit) throw new TemplateLimitError(`Range too big. The sandbox blocks ranges larger than MAX_TEMPLATE_RANGE=${limit}.`)
    return new ArrayValue(Array.from({ length }, (_, i) => new IntegerValue(start + i * step)))
  })

/** A filter templates may apply (`{{ value | name }}`), given its operand as plain data. */
export type TemplateFilter = (value: unknown) => unknown

/** The engine's values as plain JSON-like data. */
const plainValue = (value: unknown): unknown => {
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [k, plainValue((v as Value).value)]))
  if (Array.isArray(value)) return value.map((v) => plainValue((v as Value).value))
  return value
}

const GLOBALS: ReadonlyArray<readonly [string, unknown]> = [
  ["true", true],
  ["false", false],
  ["none", null],
  ["True", true],
  ["False", false],
  ["None", null]
]

/** Renders a parsed template with the context and filters, within the limits; throws when it cannot. */
export const renderProgram = (
  program: Program,
  context: Record<string, unknown>,
  filters: Readonly<Record<string, TemplateFilter>>,
  budget: TemplateBudget
): string => {
  const limits = budget.limits
  const environment = new Environment()
  for (const [name, value] of GLOBALS) environment.set(name, value)
  environment.setVariable("range", boundedRange(limits.range) as never)
  const scratch = new Environment()
  const filterValues = new Map(
    Object.entries(filters).map(([name, filter]) => [name, scratch.set(name, (value: unknown) => filter(plainValue(value))) as unknown as Value])
  )
  const interpreter = new BoundedInterpreter(environment, budget, filterValues)
  // A budget an earlier template of the request spent leaves none for this one.
  interpreter.checkTime()
  const handing = performance.now()
  for (const [name, value] of Object.entries(context)) interpreter.adopt(environment.set(name, value) as unknown as Value)
  for (const value of environment.variables.values()) interpreter.adopt(value as unknown as Value)
  budget.excluded += performance.now() - handing
  return (interpreter.evaluate(program as unknown as Node, environment) as Value).value as string
}
