/**
 * Parsing templates with @huggingface/jinja's own tokenizer and parser, and saying on which line a
 * template that does not parse goes wrong. That engine's tokens carry no positions, so the line is
 * found from the outside: tokens are laid over the source one after the other (they appear in it in
 * order), the token the parser failed at is the shortest prefix of tokens that fails the same way,
 * and a construct left open at the end (a string, a comment, a tag) is found by a small scan.
 */
import { parse, tokenize } from "@huggingface/jinja"
import { groupThousands } from "./strings.ts"

export type Program = ReturnType<typeof parse>
type Token = ReturnType<typeof tokenize>[number]

/** Why a template is refused: the line (1-based; 0 for limits on the whole template) and a message. */
export interface TemplateProblem {
  readonly line: number
  readonly message: string
}

/**
 * The engine's preprocessing runs a regular expression whose time grows with the square of each run
 * of whitespace (40,000 spaces in a row take a second): a template may hold runs whose squares add
 * up to at most this, about 2,800 whitespace characters in a single run (a few ms of work).
 */
export const MAX_WHITESPACE_WORK = 8_000_000

// ----------------------------------------------------------------------------------------------
// Lines

/** The 1-based line of an offset of the source. */
const lineAt = (source: string, offset: number): number => {
  let line = 1
  const end = Math.min(Math.max(offset, 0), source.length)
  for (let i = 0; i < end; i++) if (source.charCodeAt(i) === 10) line++
  return line
}

/** The line of the last character that is not whitespace (where an unfinished template ends). */
const lastLine = (source: string) => lineAt(source, source.trimEnd().length - 1)

const isSpace = (char: string | undefined) => char !== undefined && /\s/.test(char)

/**
 * The offset in the source of each token, found by walking both in order: texts and comments are
 * searched for, everything else starts at the next character that is not whitespace. Once a token
 * cannot be placed the rest are placed at the end (only the reported line could suffer).
 */
export const tokenOffsets = (source: string, tokens: ReadonlyArray<Token>): Array<number> => {
  const offsets: Array<number> = []
  let at = 0
  for (const token of tokens) {
    if (at > source.length) {
      offsets.push(source.length)
      continue
    }
    if (token.type === "Text") {
      const found = source.indexOf(token.value, at)
      if (found < 0) at = source.length + 1
      offsets.push(found < 0 ? source.length : found)
      at = found < 0 ? at : found + token.value.length
      continue
    }
    if (token.type === "Comment") {
      const found = source.indexOf("{#", at)
      const end = found < 0 ? -1 : source.indexOf("#}", found + 2)
      offsets.push(found < 0 ? source.length : found)
      at = end < 0 ? source.length + 1 : end + 2
      continue
    }
    while (isSpace(source[at])) at++
    offsets.push(at)
    switch (token.type) {
      case "StringLiteral": {
        const quote = source[at]
        let i = at + 1
        while (i < source.length && source[i] !== quote) i += source[i] === "\\" ? 2 : 1
        at = i + 1
        break
      }
      case "OpenStatement":
      case "OpenExpression":
        at += source[at + 2] === "-" ? 3 : 2
        break
      case "CloseStatement":
      case "CloseExpression":
        at += source[at] === "-" ? 3 : 2
        break
      default:
        at += token.value.length
    }
  }
  return offsets
}

/**
 * Where the construct left open at the end of the source starts: a string, a comment or a tag
 * (the places the tokenizer runs out of input in), following the tokenizer's rules for where
 * they end (`}}` closes an expression only outside `{ … }`).
 */
const openAtEnd = (source: string): number => {
  const opening = /\{[{%#]/g
  let i = 0
  while (i < source.length) {
    opening.lastIndex = i
    const next = opening.exec(source)
    if (next === null) return source.length
    const start = next.index
    if (source[start + 1] === "#") {
      const end = source.indexOf("#}", start + 2)
      if (end < 0) return start
      i = end + 2
      continue
    }
    const expression = source[start + 1] === "{"
    let depth = 0
    let j = start + 2
    let closed = false
    while (j < source.length) {
      const char = source[j]!
      if (char === "'" || char === '"') {
        const opened = j
        j++
        while (j < source.length && source[j] !== char) j += source[j] === "\\" ? 2 : 1
        if (j >= source.length) return opened
        j++
        continue
      }
      if (expression && depth === 0 && source.startsWith("}}", j)) {
        closed = true
        j += 2
        break
      }
      if (!expression && source.startsWith("%}", j)) {
        closed = true
        j += 2
        break
      }
      if (expression && char === "{") depth++
      if (expression && char === "}") depth--
      j++
    }
    if (!closed) return start
    i = j
  }
  return source.length
}

// ----------------------------------------------------------------------------------------------
// Parsing

/** The token after the last one: reading it marks that the parser went past the end. */
const endMarkers = (touched: { value: boolean }): Array<Token> =>
  Array.from({ length: 3 }, () => {
    const marker = { value: "" } as Token
    Object.defineProperty(marker, "type", {
      get: () => {
        touched.value = true
        return "EndOfTemplate"
      }
    })
    return marker
  })

/** Parses the tokens with end markers after them: the error, and whether the parser read past the tokens. */
const parseUntil = (tokens: ReadonlyArray<Token>, count: number): { readonly error: unknown; readonly pastEnd: boolean } => {
  const touched = { value: false }
  try {
    parse([...tokens.slice(0, count), ...endMarkers(touched)])
    return { error: undefined, pastEnd: touched.value }
  } catch (error) {
    return { error, pastEnd: touched.value }
  }
}

const messageOf = (error: unknown) =>
  error instanceof RangeError && /call stack/i.test(error.message) ? "Template is nested too deeply" : String((error as Error)?.message ?? error)

/** The blocks still open after the tokens (`if`, `for` …), innermost last. */
const openBlocks = (tokens: ReadonlyArray<Token>): Array<string> => {
  const open: Array<string> = []
  for (let i = 0; i + 1 < tokens.length; i++) {
    if (tokens[i]!.type !== "OpenStatement" || tokens[i + 1]!.type !== "Identifier") continue
    const name = tokens[i + 1]!.value
    if (name.startsWith("end")) {
      if (open.at(-1) === name.slice(3)) open.pop()
    } else if (["if", "for", "macro", "call", "filter"].includes(name)) {
      open.push(name)
    } else if (name === "set") {
      let j = i + 2
      while (j < tokens.length && tokens[j]!.type !== "CloseStatement" && tokens[j]!.type !== "Equals") j++
      if (tokens[j]?.type === "CloseStatement") open.push("set")
    }
  }
  return open
}

/** The problem of tokens the parser refuses: at the token it failed at, or at the end when it ran out. */
const parseProblem = (source: string, tokens: ReadonlyArray<Token>, error: unknown): TemplateProblem => {
  const whole = parseUntil(tokens, tokens.length)
  if (whole.pastEnd || whole.error === undefined) {
    const open = openBlocks(tokens).at(-1)
    const message = open === undefined ? "Unexpected end of template." : `Unexpected end of template. The innermost block that needs to be closed is '${open}'.`
    return { line: lastLine(source), message }
  }
  // The fewest tokens the parser fails on without reading past them: it failed at the last of them.
  let low = 1
  let high = tokens.length
  while (low < high) {
    const middle = (low + high) >> 1
    const attempt = parseUntil(tokens, middle)
    if (attempt.error !== undefined && !attempt.pastEnd) high = middle
    else low = middle + 1
  }
  const offsets = tokenOffsets(source, tokens)
  return { line: lineAt(source, offsets[low - 1] ?? source.length), message: messageOf(error) }
}

const END_OF_INPUT = new Set(["Unexpected end of input", "Missing end of comment tag"])

/** The problem of a source the tokenizer refuses: at the character it stopped at, or where an unfinished construct starts. */
const tokenizeProblem = (source: string, error: unknown): TemplateProblem => {
  const message = messageOf(error)
  if (END_OF_INPUT.has(message)) return { line: lineAt(source, openAtEnd(source)), message }
  // The shortest prefix that fails the same way ends with the character at fault.
  let low = 1
  let high = source.length
  while (low < high) {
    const middle = (low + high) >> 1
    let same = false
    try {
      tokenize(source.slice(0, middle), {})
    } catch (attempt) {
      same = messageOf(attempt) === message
    }
    if (same) high = middle
    else low = middle + 1
  }
  return { line: lineAt(source, low - 1), message }
}

/** How much work the engine's preprocessing does on the runs of whitespace of a source. */
const whitespaceWork = (source: string): number => {
  let work = 0
  for (const run of source.matchAll(/\s{2,}/g)) work += run[0].length * run[0].length
  return work
}

/**
 * The parsed template, or where and why it does not parse. Tags the reference does not know but
 * this engine would silently drop (`{% generation %}`) are refused as the reference refuses them.
 */
export const parseTemplate = (source: string): { readonly program: Program } | { readonly problem: TemplateProblem } => {
  const work = whitespaceWork(source)
  if (work > MAX_WHITESPACE_WORK) {
    return {
      problem: {
        line: 0,
        message: `Contains too much whitespace in a row (runs of whitespace whose squared lengths add up to ${groupThousands(work)}). Templates can hold runs adding up to no more than ${groupThousands(MAX_WHITESPACE_WORK)}.`
      }
    }
  }
  const generation = /\{%-?\s*(?:end)?generation\s*-?%\}/.exec(source)
  if (generation !== null) {
    const tag = generation[0].includes("endgeneration") ? "endgeneration" : "generation"
    return { problem: { line: lineAt(source, generation.index), message: `Encountered unknown tag '${tag}'.` } }
  }
  let tokens: Array<Token>
  try {
    tokens = tokenize(source, {})
  } catch (error) {
    return { problem: tokenizeProblem(source, error) }
  }
  try {
    return { program: parse(tokens) }
  } catch (error) {
    return { problem: parseProblem(source, tokens, error) }
  }
}
