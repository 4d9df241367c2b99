/**
 * String helpers. Trimming characters off strings without a regular expression: `/x+$/` tries every
 * start of a run of x and so takes time quadratic in it (seconds for 100,000 characters a user can
 * send). Numbers and versions written and compared without Intl: the first use of a locale-aware
 * function (`toLocaleString`, `localeCompare`) maps several MB of ICU's locale data into the process
 * for as long as it runs (docs/performance.md, "Memory and start-up").
 */

/** `text` without the characters of `chars` at its end. */
export const trimEnd = (text: string, chars: string): string => {
  let end = text.length
  while (end > 0 && chars.includes(text[end - 1]!)) end--
  return text.slice(0, end)
}

/** `text` without the characters of `chars` at its start. */
export const trimStart = (text: string, chars: string): string => {
  let start = 0
  while (start < text.length && chars.includes(text[start]!)) start++
  return text.slice(start)
}

/** `text` without the characters of `chars` at either end. */
export const trim = (text: string, chars: string): string => trimEnd(trimStart(text, chars), chars)

/** An integer with commas between groups of three digits, as `n.toLocaleString("en-US")` writes it (other numbers as `String(n)`). */
export const groupThousands = (n: number): string => {
  if (!Number.isSafeInteger(n)) return String(n)
  const digits = String(Math.abs(n))
  let out = ""
  for (let i = 0; i < digits.length; i++) {
    if (i > 0 && (digits.length - i) % 3 === 0) out += ","
    out += digits[i]
  }
  return n < 0 ? `-${out}` : out
}

const isDigit = (code: number) => code >= 48 && code <= 57

/**
 * Orders names the way people order versions ("python3.9" before "python3.12"): runs of digits
 * compare as numbers, everything else character by character (what `localeCompare` with
 * `numeric: true` does for such names).
 */
export const compareVersions = (a: string, b: string): number => {
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    if (isDigit(a.charCodeAt(i)) && isDigit(b.charCodeAt(j))) {
      const si = i
      const sj = j
      while (i < a.length && isDigit(a.charCodeAt(i))) i++
      while (j < b.length && isDigit(b.charCodeAt(j))) j++
      // Compared as digit strings without leading zeros, so runs of any length compare exactly.
      const x = trimStart(a.slice(si, i), "0")
      const y = trimStart(b.slice(sj, j), "0")
      if (x.length !== y.length) return x.length < y.length ? -1 : 1
      if (x !== y) return x < y ? -1 : 1
      continue
    }
    if (a[i] !== b[j]) return a[i]! < b[j]! ? -1 : 1
    i++
    j++
  }
  const rest = Math.sign(a.length - i - (b.length - j))
  // Equal as versions but written differently ("3.011", "3.11"): still a total order.
  return rest !== 0 || a === b ? rest : a < b ? -1 : 1
}
