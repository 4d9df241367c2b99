/**
 * Regular expressions that users write (JSON Schema `pattern` and `patternProperties` in parameter
 * schemas, job templates and /ui/schemas/validate), run with RE2 (re2js, pure JavaScript): it
 * matches in time linear in the text, where JavaScript's backtracking engine takes exponential time
 * on `^(a+)+$` against "aaa…a!" and blocks the whole process meanwhile.
 *
 * Patterns are written in ECMAScript syntax (JSON Schema says so); re2js translates it (`(?<name>`,
 * `\u0041`, `\cJ`). What RE2 cannot run in linear time, lookaround and backreferences, is refused
 * with a clear reason, and so is a pattern longer than MAX_PATTERN_LENGTH: compiling and running
 * one costs time in proportion to its length too.
 */
import type { RE2JS } from "re2js"
import { onFirstUse } from "./on-first-use.ts"

const re2js = onFirstUse<typeof import("re2js")>("re2js")

/** Longest pattern accepted, in characters. */
export const MAX_PATTERN_LENGTH = 2000

/** A pattern that cannot be used, and why (worded for "Invalid schema: …"). */
export class UnsupportedPattern extends Error {}

const compiled = new Map<string, RE2JS>()
/** Compiled patterns kept, least recently used dropped first. */
const CACHE_SIZE = 512

const quoted = (pattern: string) => JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 80)}…` : pattern)

/** The pattern compiled, from the cache when it was compiled before; throws UnsupportedPattern. */
export const compilePattern = (pattern: string): RE2JS => {
  const cached = compiled.get(pattern)
  if (cached !== undefined) {
    compiled.delete(pattern)
    compiled.set(pattern, cached)
    return cached
  }
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new UnsupportedPattern(`the pattern ${quoted(pattern)} is longer than ${MAX_PATTERN_LENGTH} characters`)
  }
  let regex: RE2JS
  try {
    const { RE2JS } = re2js()
    regex = RE2JS.compile(RE2JS.translateRegExp(pattern))
  } catch (error) {
    throw new UnsupportedPattern(
      `the pattern ${quoted(pattern)} cannot be used (${(error as Error).message}); ` +
        "patterns are matched with RE2, which has no lookahead, lookbehind or backreferences"
    )
  }
  compiled.set(pattern, regex)
  if (compiled.size > CACHE_SIZE) compiled.delete(compiled.keys().next().value!)
  return regex
}

/** Why the pattern cannot be used, or undefined when it can. */
export const patternProblem = (pattern: string): string | undefined => {
  try {
    compilePattern(pattern)
    return undefined
  } catch (error) {
    if (error instanceof UnsupportedPattern) return error.message
    throw error
  }
}

/** Whether the pattern matches somewhere in `text` (JSON Schema's `pattern` is unanchored). */
export const patternMatches = (pattern: string, text: string): boolean => compilePattern(pattern).test(text)

/**
 * ajv's `code.regExp` option: the engine its `pattern` and `patternProperties` keywords use. ajv
 * keys compiled patterns by `toString()`, so each answers its own source; the `u` flag changes
 * nothing, RE2 reads the text as code points anyway.
 */
export const regExpEngine = Object.assign(
  (pattern: string, _flags: string) => {
    const regex = compilePattern(pattern)
    return { test: (text: string) => regex.test(text), toString: () => `re2:${pattern}` }
  },
  // Only used by ajv's standalone code generation, which Baton does not use.
  { code: "re2" }
)
