/**
 * The text search language of logs and events, as the reference parses it: plain terms (any of them), `+term`
 * (required), `-term` or `!term` (excluded), and "quoted phrases" as single terms.
 */
export interface TextQuery {
  readonly include: ReadonlyArray<string>
  readonly exclude: ReadonlyArray<string>
  readonly required: ReadonlyArray<string>
}

export const parseTextQuery = (query: string): TextQuery => {
  const include: Array<string> = []
  const exclude: Array<string> = []
  const required: Array<string> = []
  let i = 0
  const skipSpace = () => {
    while (i < query.length && /\s/.test(query[i]!)) i++
  }
  const readTerm = (): string => {
    if (query[i] === '"') {
      i++
      let term = ""
      while (i < query.length && query[i] !== '"') {
        if (query[i] === "\\" && (query[i + 1] === '"' || query[i + 1] === "\\")) i++
        term += query[i]
        i++
      }
      i++
      return term
    }
    let term = ""
    while (i < query.length && !/\s/.test(query[i]!) && query[i] !== '"') term += query[i++]
    return term
  }
  skipSpace()
  while (i < query.length) {
    const prefix = query[i]
    const target = prefix === "-" || prefix === "!" ? exclude : prefix === "+" ? required : include
    if (target !== include) {
      i++
      // A prefix standing alone is dropped.
      if (i >= query.length || /\s/.test(query[i]!)) {
        skipSpace()
        continue
      }
    }
    const term = readTerm()
    if (term !== "") target.push(term)
    skipSpace()
  }
  return { include, exclude, required }
}
