/**
 * Job variables against a work pool's base job template: the template's `variables` schema, with the
 * defaults it declares filled in, must accept them. Worded as the reference words its failures.
 */
import { checkAgainstSchema, describeFailure, prepareParameterSchema, type SchemaCheck } from "../domain/json-schema.ts"
import { isObject } from "../domain/schemas.ts"


/** The template's variables schema, or undefined when it declares none. */
const variablesOf = (template: Record<string, unknown>) => (isObject(template.variables) ? template.variables : undefined)

/** The defaults the template's variables declare (those pointing at block documents aside). */
export const declaredDefaults = (template: Record<string, unknown>) => {
  const defaults: Record<string, unknown> = {}
  const properties = variablesOf(template)?.properties
  for (const [name, property] of Object.entries(isObject(properties) ? properties : {})) {
    if (!isObject(property) || !("default" in property)) continue
    const value = property.default
    if (isObject(value) && isObject(value.$ref)) continue
    defaults[name] = value
  }
  return defaults
}

/** Whether a default points at a block document (which cannot exist until blocks do). */
export const referencesBlock = (template: Record<string, unknown>) => {
  const properties = variablesOf(template)?.properties
  return Object.values(isObject(properties) ? properties : {}).some((property) =>
    isObject(property) && isObject(property.default) && isObject(property.default.$ref) && "block_document_id" in property.default.$ref
  )
}

/** Checks `values` laid over the template's defaults; passes when the template declares no variables. */
export const checkJobVariables = (
  template: Record<string, unknown>,
  values: Record<string, unknown>,
  options: { readonly ignoreRequired: boolean }
): SchemaCheck => {
  const variables = variablesOf(template)
  if (variables === undefined) return { valid: true }
  return checkAgainstSchema(prepareParameterSchema(variables, options), { ...declaredDefaults(template), ...values })
}

export { describeFailure }
