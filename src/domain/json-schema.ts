/** Validating values against JSON Schemas users store (run input schemas, parameter schemas), with ajv. */
import { Ajv, type ErrorObject } from "ajv"

const ajv = new Ajv({ allErrors: false, strict: false, validateFormats: false })

export type SchemaCheck =
  | { readonly valid: true }
  | { readonly valid: false; readonly field: string | null; readonly message: string }

const describe = (error: ErrorObject): { field: string | null; message: string } => {
  const path = error.instancePath.replace(/^\//, "").replace(/\//g, ".")
  if (error.keyword === "required") {
    return { field: path === "" ? null : path, message: `'${(error.params as { missingProperty: string }).missingProperty}' is a required property` }
  }
  return { field: path === "" ? null : path, message: `${JSON.stringify(error.data ?? null)} ${error.message ?? "is not valid"}` }
}

/** Checks `value` against `schema`; a schema that does not compile is reported as invalid. */
export const checkAgainstSchema = (schema: unknown, value: unknown): SchemaCheck => {
  let validate
  try {
    validate = ajv.compile(schema as object)
  } catch (cause) {
    return { valid: false, field: null, message: `Invalid schema: ${(cause as Error).message}` }
  }
  if (validate(value)) return { valid: true }
  const first = validate.errors?.[0]
  return first === undefined ? { valid: false, field: null, message: "is not valid" } : { valid: false, ...describe({ ...first, data: first.data }) }
}
