/**
 * Label patterns, as event filters and automation triggers read them (the reference's `matches` and
 * its LIKE translation): a leading `!` negates; `*` matches any run of characters, none included;
 * `?` matches exactly one character; every other character, `[`, `\`, `%` and `_` included, matches
 * itself. A missing label matches no pattern, a negated one neither.
 *
 * One parse serves both uses, so the two cannot disagree: matching a value in memory (live streams,
 * automation triggers) and the LIKE pattern a SQL query uses. No regular expression is ever built
 * from a pattern: a backtracking engine takes exponential time on `*a*a*a…*b`.
 *
 * Matching takes time linear in the value for a pattern without `?` (each run between two `*` is
 * found with KMP, leftmost first, which is enough for `*`), and O(value × literal runs) for one with
 * `?`; a pattern may therefore hold at most MAX_SINGLE_WILDCARDS `?`.
 */

/** Most `?` one pattern may hold: matching the largest event's value then takes at most ~0.2 s. */
export const MAX_SINGLE_WILDCARDS = 16

type Token = { readonly kind: "any" } | { readonly kind: "one" } | { readonly kind: "char"; readonly char: string }

/** A literal run of a segment, at a fixed offset from the segment's start, with its KMP failure table. */
interface Piece {
  readonly offset: number
  readonly units: Int32Array
  readonly fail: Int32Array
}

/** The part of a pattern between two `*`: its length in characters and its literal runs (`?` are the gaps). */
interface Segment {
  readonly length: number
  readonly pieces: ReadonlyArray<Piece>
}

export interface Glob {
  readonly negated: boolean
  readonly tokens: ReadonlyArray<Token>
}

/** The pattern's parts; everything else derives from these tokens. */
export const parseGlob = (pattern: string): Glob => {
  const negated = pattern.startsWith("!")
  const tokens: Array<Token> = []
  for (const char of negated ? pattern.slice(1) : pattern) {
    tokens.push(char === "*" ? { kind: "any" } : char === "?" ? { kind: "one" } : { kind: "char", char })
  }
  return { negated, tokens }
}

/** How many `?` the pattern holds. */
export const singleWildcards = (pattern: string): number => {
  let count = 0
  for (const char of pattern) if (char === "?") count++
  return count
}

/** The one value an unnegated pattern without wildcards matches. */
export const exactValue = (glob: Glob): string | undefined =>
  glob.negated || glob.tokens.some((t) => t.kind !== "char") ? undefined : glob.tokens.map((t) => (t.kind === "char" ? t.char : "")).join("")

/** The LIKE pattern (escape character `\`) matching what the unnegated glob matches. */
export const likePattern = (glob: Glob): string =>
  glob.tokens
    .map((t) => (t.kind === "any" ? "%" : t.kind === "one" ? "_" : t.char === "\\" || t.char === "%" || t.char === "_" ? `\\${t.char}` : t.char))
    .join("")

const codePoints = (text: string): Int32Array => {
  const out = new Int32Array(text.length)
  let n = 0
  for (let i = 0; i < text.length; i++) {
    const unit = text.codePointAt(i)!
    out[n++] = unit
    if (unit > 0xffff) i++
  }
  return out.subarray(0, n)
}

const failureTable = (units: Int32Array): Int32Array => {
  const fail = new Int32Array(units.length)
  let k = 0
  for (let i = 1; i < units.length; i++) {
    while (k > 0 && units[i] !== units[k]) k = fail[k - 1]!
    if (units[i] === units[k]) k++
    fail[i] = k
  }
  return fail
}

const segments = (tokens: ReadonlyArray<Token>): Array<Segment> => {
  const out: Array<Segment> = []
  let pieces: Array<Piece> = []
  let run: Array<number> = []
  let length = 0
  const endRun = () => {
    if (run.length > 0) {
      const units = Int32Array.from(run)
      pieces.push({ offset: length - run.length, units, fail: failureTable(units) })
    }
    run = []
  }
  for (const token of tokens) {
    if (token.kind === "any") {
      endRun()
      out.push({ length, pieces })
      pieces = []
      length = 0
    } else if (token.kind === "one") {
      endRun()
      length++
    } else {
      run.push(token.char.codePointAt(0)!)
      length++
    }
  }
  endRun()
  out.push({ length, pieces })
  return out
}

const matchesAt = (text: Int32Array, at: number, segment: Segment) =>
  segment.pieces.every((piece) => piece.units.every((unit, i) => text[at + piece.offset + i] === unit))

/**
 * The leftmost start in [from, end - length] where the segment matches, or -1. Each literal run is
 * followed by its own KMP automaton; a start is refused as soon as one run is missing at its offset,
 * and accepted once every run has been seen there.
 */
const find = (text: Int32Array, from: number, end: number, segment: Segment): number => {
  const length = segment.length
  if (end - from < length) return -1
  if (segment.pieces.length === 0) return from
  const states = new Int32Array(segment.pieces.length)
  // Whether the start s (at s % length) is still possible: each start lives `length` steps.
  const alive = new Uint8Array(length)
  for (let t = from; t < end; t++) {
    alive[t % length] = 1
    const unit = text[t]!
    for (let j = 0; j < segment.pieces.length; j++) {
      const { fail, offset, units } = segment.pieces[j]!
      let q = states[j]!
      while (q > 0 && units[q] !== unit) q = fail[q - 1]!
      if (units[q] === unit) q++
      const found = q === units.length
      if (found) q = fail[q - 1]!
      states[j] = q
      const start = t - offset - units.length + 1
      if (!found && start >= from) alive[start % length] = 0
    }
    const start = t - length + 1
    if (start >= from && alive[start % length] === 1) return start
  }
  return -1
}

/**
 * Whether the whole text matches the unnegated glob: the first segment at its start, the last at
 * its end, and the others in order between them, each as far left as it goes.
 */
const matchesText = (glob: Glob, value: string): boolean => {
  const wildcards = glob.tokens.filter((t) => t.kind !== "char").length
  const tail = glob.tokens.at(-1)?.kind === "any"
  // The common shapes, exact and prefix, without copying the value.
  if (wildcards === 0 || (wildcards === 1 && tail)) {
    const literal = glob.tokens.map((t) => (t.kind === "char" ? t.char : "")).join("")
    return wildcards === 0 ? value === literal : value.startsWith(literal)
  }
  const parts = segments(glob.tokens)
  const text = codePoints(value)
  const first = parts[0]!
  if (parts.length === 1) return text.length === first.length && matchesAt(text, 0, first)
  const last = parts.at(-1)!
  if (first.length + last.length > text.length) return false
  if (!matchesAt(text, 0, first) || !matchesAt(text, text.length - last.length, last)) return false
  let position = first.length
  const end = text.length - last.length
  for (const segment of parts.slice(1, -1)) {
    const start = find(text, position, end, segment)
    if (start < 0) return false
    position = start + segment.length
  }
  return true
}

/** Whether `value` matches `pattern`; a missing value matches nothing, even a negated pattern. */
export const globMatches = (pattern: string, value: string | undefined): boolean => {
  if (value === undefined) return false
  const glob = parseGlob(pattern)
  const matched = matchesText(glob, value)
  return glob.negated ? !matched : matched
}
