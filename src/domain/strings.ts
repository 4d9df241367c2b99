/**
 * Trimming characters off strings without a regular expression: `/x+$/` tries every start of a run
 * of x and so takes time quadratic in it (seconds for 100,000 characters a user can send).
 */

/** `text` without the characters of `chars` at its end. */
export const trimEnd = (text: string, chars: string): string => {
  let end = text.length
  while (end > 0 && chars.includes(text[end - 1]!)) end--
  return text.slice(0, end)
}

/** `text` without the characters of `chars` at either end. */
export const trim = (text: string, chars: string): string => {
  let start = 0
  while (start < text.length && chars.includes(text[start]!)) start++
  return trimEnd(text.slice(start), chars)
}
