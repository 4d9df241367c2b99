/**
 * The values of @huggingface/jinja as Baton's template runtime sees them: the engine's value classes
 * (it does not export them), how large a value would be written out, and the sizes of outputs that
 * can be known from a filter's arguments before it runs.
 */
import { Environment } from "@huggingface/jinja"

/** A render that went over one of its limits. */
export class TemplateLimitError extends Error {}

/** A value of the engine (its classes are not exported; `type` tells them apart). */
export interface Value {
  readonly type: string
  readonly value: any
  readonly builtins: ReadonlyMap<string, Value>
  toString(): string
}

// The engine's value classes, taken from values it makes.
const probe = new Environment()
const classOf = (sample: unknown) => probe.set(`sample${probe.variables.size}`, sample).constructor as new (value?: unknown) => Value
export const StringValue = classOf("")
export const IntegerValue = classOf(1)
export const ArrayValue = classOf([])
export const FunctionValue = classOf(() => null)

/** The values inside a list, dict or namespace. */
export const children = (value: Value): Iterable<Value> =>
  value.value instanceof Map ? (value.value as Map<string, Value>).values() : Array.isArray(value.value) ? (value.value as Array<Value>) : []

export const isContainer = (value: Value) =>
  value.type === "ArrayValue" || value.type === "TupleValue" || value.type === "ObjectValue" || value.type === "KeywordArgumentsValue"

// ----------------------------------------------------------------------------------------------
// Measuring values

interface Measure {
  /** Characters of the value written out as JSON, about (every item and key counted with its punctuation). */
  readonly weight: number
  /** Levels of lists and dicts. */
  readonly depth: number
  /** Items, entries and scalars in it. */
  readonly nodes: number
}

/** Lists and dicts never change once made (only namespaces do), so their measure is kept. */
const measures = new WeakMap<object, Measure>()

const NAMESPACE_INSIDE = "A namespace cannot be put inside a list, a dict or a namespace in templates."

const measure = (value: Value): Measure => {
  switch (value.type) {
    case "StringValue":
      return { weight: value.value.length + 2, depth: 0, nodes: 1 }
    case "NamespaceValue":
      throw new TemplateLimitError(NAMESPACE_INSIDE)
    case "FunctionValue":
      return { weight: 8, depth: 0, nodes: 1 }
  }
  if (!isContainer(value)) return { weight: String(value.value).length + 2, depth: 0, nodes: 1 }
  const known = measures.get(value)
  if (known !== undefined) return known
  const result = value.value instanceof Map ? measureEntries(value.value) : measureItems(value.value)
  measures.set(value, result)
  return result
}

const measureItems = (items: ReadonlyArray<Value>): Measure => {
  let weight = 2
  let depth = 0
  let nodes = 1
  for (const item of items) {
    const inner = measure(item)
    weight += inner.weight + 2
    depth = Math.max(depth, inner.depth)
    nodes += inner.nodes
  }
  return { weight, depth: depth + 1, nodes }
}

const measureEntries = (entries: ReadonlyMap<string, Value>): Measure => {
  let weight = 2
  let depth = 0
  let nodes = 1
  for (const [key, item] of entries) {
    const inner = measure(item)
    weight += key.length + 4 + inner.weight
    depth = Math.max(depth, inner.depth)
    nodes += inner.nodes
  }
  return { weight, depth: depth + 1, nodes }
}

/** A namespace's measure is never kept (its entries change); it may not hold another namespace. */
export const measureAny = (value: Value) => (value.type === "NamespaceValue" ? measureEntries(value.value) : measure(value))

// ----------------------------------------------------------------------------------------------
// Sizes of outputs, known before they are made

/** How often `part` occurs in `text` (without overlaps), counting at most `most`. */
export const occurrences = (text: string, part: string, most = Infinity): number => {
  if (part === "") return Math.min(text.length + 1, most)
  let count = 0
  for (let at = text.indexOf(part); at >= 0 && count < most; at = text.indexOf(part, at + part.length)) count++
  return count
}

export const integer = (value: Value | undefined) => (value?.type === "IntegerValue" ? (value.value as number) : undefined)
export const string = (value: Value | undefined) => (value?.type === "StringValue" ? (value.value as string) : undefined)

/** The length of `text` with `old` replaced by `replacement` (`count` times at most; all when null or negative). */
export const replacedLength = (text: string, old: string, replacement: string, count: number | undefined) =>
  text.length + occurrences(text, old, count === undefined || count < 0 ? Infinity : count) * (replacement.length - old.length)

/** The items `range()` would give, counted from its arguments as the reference does. */
export const rangeLength = (start: number, stop: number, step: number) =>
  step > 0 ? Math.max(0, Math.ceil((stop - start) / step)) : Math.max(0, Math.ceil((start - stop) / -step))

