/**
 * Failures as they may be logged: without the input they quote. A request body is never logged, yet
 * several errors carry parts of one in their message: a schema's decode error (`actual "…"`), a JSON
 * syntax error (V8 quotes the text around the fault), PostgreSQL's refusals (`invalid input syntax
 * for type uuid: "…"`, `Key (name)=(…) already exists`). Each failure and defect of a cause is
 * logged as its name, its codes and where in the code it happened; the message is kept only for
 * errors that do not quote input.
 */
import { Cause } from "effect"

const tagOf = (error: object): string | undefined => {
  const tag = (error as { _tag?: unknown })._tag
  return typeof tag === "string" ? tag : undefined
}

/** The error's kind: its tag, or its class name. */
const nameOf = (error: unknown): string => {
  if (typeof error !== "object" || error === null) return typeof error
  return tagOf(error) ?? (error instanceof Error ? error.name : error.constructor?.name ?? "object")
}

/** A PostgreSQL error as node-postgres reports it: SQLSTATE code and severity. */
const isDatabaseError = (error: object) =>
  typeof (error as { code?: unknown }).code === "string" && typeof (error as { severity?: unknown }).severity === "string"

/** Errors whose message may quote the input that caused them. */
const quotesInput = (error: object): boolean => {
  const tag = tagOf(error)
  return (
    error instanceof SyntaxError ||
    tag === "ParseError" ||
    tag === "HttpApiDecodeError" ||
    tag === "RequestError" ||
    isDatabaseError(error)
  )
}

/** What names the problem without quoting input: codes, and the places a schema found problems at. */
const factsOf = (error: object): Array<string> => {
  const facts: Array<string> = []
  const { code, routine, constraint, table, column } = error as Record<string, unknown>
  if (typeof code === "string") facts.push(isDatabaseError(error) ? `SQLSTATE ${code}` : code)
  for (const [name, value] of [["constraint", constraint], ["table", table], ["column", column], ["routine", routine]] as const) {
    if (typeof value === "string") facts.push(`${name} ${value}`)
  }
  const issues = (error as { issues?: unknown }).issues
  if (Array.isArray(issues)) {
    const paths = issues.map((issue) => (Array.isArray(issue?.path) ? issue.path.join(".") : "")).slice(0, 10)
    facts.push(`at ${paths.map((p) => p === "" ? "(root)" : p).join(", ")}`)
  }
  return facts
}

/** One error, and the errors it wraps, described in a line. */
const describe = (error: unknown, depth = 0): string => {
  if (typeof error !== "object" || error === null) return nameOf(error)
  const facts = factsOf(error)
  const message = error instanceof Error && !quotesInput(error) ? error.message : undefined
  const line = `${nameOf(error)}${message ? `: ${message}` : ""}${facts.length > 0 ? ` (${facts.join("; ")})` : ""}`
  const inner = (error as { cause?: unknown }).cause
  return inner !== undefined && depth < 4 ? `${line} <- ${describe(inner, depth + 1)}` : line
}

/** The code locations of an error's stack, without its message. */
const framesOf = (error: unknown): string => {
  const stack = error instanceof Error && typeof error.stack === "string" ? error.stack : ""
  return stack.split("\n").filter((line) => line.trimStart().startsWith("at ")).join("\n")
}

/** `error` as an Error that says what it was and where, without quoting input. */
export const safeError = (error: unknown): Error => {
  const safe = new Error(describe(error))
  safe.name = "Failure"
  const frames = framesOf(error)
  safe.stack = `${safe.name}: ${safe.message}${frames === "" ? "" : `\n${frames}`}`
  return safe
}

/** `cause`'s failures and defects, each as its safe description, for a log. */
export const safeCause = (cause: Cause.Cause<unknown>): Cause.Cause<never> =>
  [...Cause.failures(cause), ...Cause.defects(cause)].reduce<Cause.Cause<never>>(
    (safe, error) => Cause.sequential(safe, Cause.die(safeError(error))),
    Cause.empty
  )
