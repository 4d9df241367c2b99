/**
 * Checks on a request's raw input that no schema can make, before it is decoded: JSON nested too
 * deeply to decode, numbers too large to be finite (which JSON.parse reads as Infinity, and JSON
 * cannot write back), and text that PostgreSQL cannot store (a NUL character, an unpaired UTF-16
 * surrogate) anywhere in the path, the query or the body.
 */
import type { ValidationDetailItem } from "../domain/problems.ts"

/**
 * The deepest nesting of lists and objects accepted in a body. The reference's JSON parser gives up
 * a little below 1000 levels (Python's recursion limit) and answers 400; deeper values would also
 * overflow the stack of the code that decodes, reports and stores them.
 */
export const MAX_JSON_DEPTH = 1000

/** Whether JSON `text` nests lists and objects deeper than `max` (strings are skipped). */
export const nestsDeeperThan = (text: string, max: number): boolean => {
  // A text cannot nest deeper than it has characters.
  if (text.length <= max) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
    } else if (c === 34) inString = true
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) return true
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--
  }
  return false
}

/**
 * On a payload schema: its handler removes the characters PostgreSQL cannot store itself (as the
 * logs route drops NUL characters, the reference's way), so the request check lets them through.
 */
export const CleansTextAnnotationId: unique symbol = Symbol.for("baton/http/CleansText")

/**
 * On a payload schema: a check of the parsed body made before it is decoded, for input whose
 * decoding alone would cost far more than its size suggests (triggers nested hundreds deep). It
 * returns the problems, if any, as 422 detail items.
 */
export const PrecheckAnnotationId: unique symbol = Symbol.for("baton/http/Precheck")
export type Precheck = (body: unknown) => ReadonlyArray<ValidationDetailItem>

/** Why `text` cannot be stored, if it cannot: a NUL character or an unpaired surrogate. */
export const unstorable = (text: string): string | undefined => {
  if (text.includes("\u0000")) return "Input should be a valid string, NUL characters (\\u0000) are not allowed"
  // A high surrogate not followed by a low one, or a low one not preceded by a high one.
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text)) {
    return "Input should be a valid string, unpaired surrogates are not allowed"
  }
  return undefined
}

/** The problem item for unstorable text at `loc`. */
export const unstorableItem = (loc: ReadonlyArray<string | number>, input: string, msg: string): ValidationDetailItem => ({
  loc,
  msg,
  type: "string_unicode",
  input
})

/**
 * A JSON text that may hold a NUL or a surrogate: either one can only be written as a \u escape,
 * so a body without such an escape needs no closer look.
 */
export const mayHoldUnstorableText = (text: string): boolean => /\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})/.test(text)

/**
 * A JSON text that may hold a number too large for a double (`1e400`, 309 digits or more), which
 * JSON.parse reads as Infinity: only a literal with an exponent of three digits or a very long run
 * of digits can be one.
 */
export const mayHoldNonFiniteNumber = (text: string): boolean => /[eE]\+?\d{3,}|\d{309}/.test(text)

/** The problem item for a number too large to be finite at `loc`. */
const nonFiniteItem = (loc: ReadonlyArray<string | number>): ValidationDetailItem => ({
  loc,
  msg: "Input should be a finite number",
  type: "finite_number",
  input: null
})

/**
 * Every string and key in a parsed JSON `value` that cannot be stored (unless `strings` is false:
 * the handler cleans them), and every number that is not finite, with where it is.
 */
export const unstorableItems = (
  root: ReadonlyArray<string | number>,
  value: unknown,
  options: { readonly strings: boolean } = { strings: true }
): Array<ValidationDetailItem> => {
  const items: Array<ValidationDetailItem> = []
  // Iterative (so that no nesting the depth limit lets through can overflow the stack here), in
  // document order: a key is checked where its value is.
  const stack: Array<readonly [ReadonlyArray<string | number>, unknown]> = [[root, value]]
  while (stack.length > 0) {
    const [loc, v] = stack.pop()!
    const key = loc[loc.length - 1]
    if (options.strings && loc.length > root.length && typeof key === "string") {
      const msg = unstorable(key)
      if (msg !== undefined) items.push(unstorableItem(loc, key, msg))
    }
    if (typeof v === "string") {
      const msg = options.strings ? unstorable(v) : undefined
      if (msg !== undefined) items.push(unstorableItem(loc, v, msg))
    } else if (typeof v === "number") {
      if (!Number.isFinite(v)) items.push(nonFiniteItem(loc))
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([[...loc, i], v[i]])
    } else if (v !== null && typeof v === "object") {
      const entries = Object.entries(v)
      for (let i = entries.length - 1; i >= 0; i--) stack.push([[...loc, entries[i]![0]], entries[i]![1]])
    }
  }
  return items
}
