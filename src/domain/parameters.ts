/**
 * Run parameters and inputs: their size limit, hydration of `__prefect_kind` values (json, none,
 * jinja, workspace_variable), and checks against a parameter schema, each worded as the reference
 * words it.
 */
import { Effect, Either } from "effect"
import { ValidationError } from "./errors.ts"
import { valueErrorItem } from "./problems.ts"
import { checkParameters, describeFailure } from "./json-schema.ts"
import { renderTemplate, type TemplateBudget, templateBudget, type TemplateFilter, validateTemplate } from "./templates.ts"
import { isObject } from "./schemas.ts"
import { groupThousands } from "./strings.ts"

type Json = unknown

/** Bytes of the parameters as the reference counts them: compact JSON with non-ASCII escaped. */
export const serializedSize = (parameters: Json): number => {
  const text = JSON.stringify(parameters) ?? ""
  let size = 0
  for (let i = 0; i < text.length; i++) size += text.charCodeAt(i) > 127 ? 6 : 1
  return size
}

/** The reference's refusal of parameters over `max` bytes (0 turns the limit off); undefined when they fit. */
export const parameterSizeProblem = (parameters: Json, max: number): string | undefined => {
  if (max === 0) return undefined
  const size = serializedSize(parameters)
  return size > max
    ? `Flow run parameters must be less than ${groupThousands(max)} bytes when serialized (got ${groupThousands(size)} bytes).`
    : undefined
}

/**
 * The reference's 422 for parameters over server.api.max_parameter_size, found at `loc` of the
 * body (its `parameters` field): a value_error, checked before anything else of the request.
 */
export const checkParameterSize = (parameters: Json, max: number, loc: ReadonlyArray<string | number> = ["parameters"]) => {
  const problem = parameters === undefined || parameters === null ? undefined : parameterSizeProblem(parameters, max)
  return problem === undefined
    ? Effect.void
    : Effect.fail(new ValidationError({ detail: [valueErrorItem(["body", ...loc], problem, parameters)] }))
}

class HydrationError {
  constructor(readonly message: string) {}
}

/** Marks a value that hydrates to nothing: its key (or list item) is dropped. */
const REMOVE = Symbol("remove")

/**
 * Placeholders, when hydration keeps its problems in place instead of failing (to check values
 * against a schema, as the reference's UI does): an empty object standing for a value that could not
 * be produced (with the problem) or is not known yet (an unrendered template, without one). Empty and
 * without a prototype, so a schema finds nothing in it; what it stands for is looked up here.
 */
const placeholders = new WeakMap<object, { readonly problem: string | null }>()

const placeholder = (problem: string | null): object => {
  const value = Object.freeze(Object.create(null) as object)
  placeholders.set(value, { problem })
  return value
}

/** What a hydrated value stands for when it is a placeholder. */
export const placeholderOf = (value: unknown): { readonly problem: string | null } | undefined =>
  typeof value === "object" && value !== null ? placeholders.get(value) : undefined

export interface HydrationContext {
  /** A workspace variable's value; undefined when there is none of that name. */
  readonly variable: (name: string) => Json | undefined
  /** What `jinja` values are rendered with (an automation's event, labels, objects …). */
  readonly jinja?: Record<string, unknown>
  /** Filters `jinja` values may use beyond the engine's own. */
  readonly filters?: Readonly<Record<string, TemplateFilter>>
  /** What rendering the `jinja` values may spend in all (one request's or action's); a fresh one per hydration when not given. */
  readonly budget?: TemplateBudget
  /**
   * Keep problems as placeholders in place instead of failing on the first, and leave templates
   * unrendered (only checked): values hydrated to be checked, not used.
   */
  readonly keepProblems?: boolean
}

const problem = (message: string, ctx: HydrationContext) => {
  if (ctx.keepProblems) return placeholder(message)
  throw new HydrationError(message)
}

/** A placeholder (or a value to drop) from hydrating a part of a `__prefect_kind` value: passed on as it is. */
const passedOn = (value: Json) => value === REMOVE || placeholderOf(value) !== undefined

const hydrateValue = (value: Json, ctx: HydrationContext): Json | typeof REMOVE => {
  if (Array.isArray(value)) return value.map((v) => hydrateValue(v, ctx)).filter((v) => v !== REMOVE)
  if (!isObject(value)) return value
  if (!("__prefect_kind" in value)) {
    const out: Record<string, Json> = {}
    for (const [k, v] of Object.entries(value)) {
      const h = hydrateValue(v, ctx)
      if (h !== REMOVE) out[k] = h
    }
    return out
  }
  switch (value.__prefect_kind) {
    case "none": {
      if (!("value" in value)) return problem("Missing 'value' key in __prefect object", ctx)
      return hydrateValue(value.value, ctx)
    }
    case "json": {
      if (!("value" in value)) return REMOVE
      const inner = isObject(value.value) ? hydrateValue(value.value, ctx) : value.value
      if (typeof inner !== "string") return inner
      try {
        return JSON.parse(inner)
      } catch (cause) {
        return problem(`Invalid JSON: ${(cause as Error).message}`, ctx)
      }
    }
    case "jinja": {
      if (!("template" in value)) return problem("Missing 'template' key in __prefect object", ctx)
      const template = isObject(value.template) ? hydrateValue(value.template, ctx) : value.template
      if (passedOn(template)) return template
      if (ctx.keepProblems) {
        const invalid = validateTemplate(String(template))
        return invalid === undefined ? placeholder(null) : placeholder(`Invalid jinja: ${invalid.message}`)
      }
      const rendered = renderTemplate(String(template), ctx.jinja ?? {}, ctx.filters ?? {}, ctx.budget)
      if (Either.isLeft(rendered)) return problem(`Invalid jinja: ${rendered.left}`, ctx)
      return rendered.right
    }
    case "workspace_variable": {
      const name = isObject(value.variable_name) ? hydrateValue(value.variable_name, ctx) : value.variable_name
      if (passedOn(name)) return name
      if (typeof name !== "string") return REMOVE
      const found = ctx.variable(name)
      if (found === undefined) return problem(`Variable '${name}' not found in workspace.`, ctx)
      return found
    }
    default:
      return value.value ?? null
  }
}

/** Parameters with every `__prefect_kind` value replaced by what it stands for; the first problem otherwise. */
export const hydrate = (parameters: Record<string, Json>, ctx: HydrationContext): Either.Either<Record<string, Json>, string> => {
  try {
    const out = hydrateValue(parameters, ctx.budget === undefined ? { ...ctx, budget: templateBudget() } : ctx)
    return Either.right(out === REMOVE || !isObject(out) ? {} : out)
  } catch (error) {
    if (error instanceof HydrationError) return Either.left(error.message)
    throw error
  }
}

/**
 * A value with every `__prefect_kind` replaced by what it stands for, problems and unrendered
 * templates left in place as placeholders (see placeholderOf). Not necessarily an object: a value
 * that is itself one `__prefect_kind` hydrates to whatever it stands for.
 */
export const hydrateKeepingProblems = (value: Record<string, Json>, ctx: Omit<HydrationContext, "keepProblems">): Json => {
  const out = hydrateValue(value, { ...ctx, keepProblems: true })
  return out === REMOVE ? {} : out
}

/**
 * The first `jinja` value whose template is refused (it does not parse, or breaks the loop limits),
 * with its place in the value: the check made when parameters are stored, before they are ever
 * rendered. Only the templates hydration would render are looked at.
 */
export const templateProblem = (
  value: Json,
  path: ReadonlyArray<string | number> = []
): { readonly path: ReadonlyArray<string | number>; readonly message: string } | undefined => {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = templateProblem(item, [...path, i])
      if (found !== undefined) return found
    }
    return undefined
  }
  if (!isObject(value)) return undefined
  if (!("__prefect_kind" in value)) {
    for (const [key, item] of Object.entries(value)) {
      const found = templateProblem(item, [...path, key])
      if (found !== undefined) return found
    }
    return undefined
  }
  switch (value.__prefect_kind) {
    case "none":
    case "json":
      return templateProblem(value.value, [...path, "value"])
    case "jinja": {
      if (typeof value.template !== "string") return templateProblem(value.template, [...path, "template"])
      const problem = validateTemplate(value.template)
      return problem === undefined ? undefined : { path: [...path, "template"], message: `Invalid jinja: ${problem.message}` }
    }
    default:
      return undefined
  }
}

/** The workspace variables a value refers to. */
export const referencedVariables = (value: Json): Array<string> => {
  const names = new Set<string>()
  const visit = (node: Json) => {
    if (Array.isArray(node)) return node.forEach(visit)
    if (!isObject(node)) return
    if (node.__prefect_kind === "workspace_variable" && typeof node.variable_name === "string") names.add(node.variable_name)
    Object.values(node).forEach(visit)
  }
  visit(value)
  return [...names]
}

export type SchemaProblem =
  | { readonly kind: "no-schema" }
  | { readonly kind: "invalid"; readonly message: string }
  /** The schema itself cannot be used ("Invalid schema: …"): a 422, as the reference answers one it cannot use. */
  | { readonly kind: "unusable-schema"; readonly message: string }

/**
 * Checks parameters against a deployment's schema: `partial` ignores `required` (a deployment may
 * leave parameters to its runs). Undefined when they satisfy it.
 */
export const parameterSchemaProblem = (
  schema: unknown,
  parameters: Json,
  options: { readonly partial: boolean }
): SchemaProblem | undefined => {
  if (!isObject(schema)) return { kind: "no-schema" }
  const check = checkParameters(schema, parameters, { ignoreRequired: options.partial })
  if (check.valid) return undefined
  return check.unusable ? { kind: "unusable-schema", message: check.message } : { kind: "invalid", message: describeFailure(check) }
}
